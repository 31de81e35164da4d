"""``zombie``: two writers at once — the old incarnation is slow, not dead.

Early in its window the running incarnation is stalled right before a write (the system's
``stall_failpoint`` armed with ``sleep``: the upsert source has read its range and diffed it against
its state, and holds that decision) and given up: the supervisor starts a new incarnation
beside it, which rehydrates and seals steps. The stall ends later in the window and the old one
goes on with its stale decision. A correctly fenced system stops it at that write (the
upsert source exits 3, "fenced") and nothing is written twice; with fencing broken it writes beside
the new one, which the checkers see. A stall (not SIGSTOP) because a frozen process may hold
the store's write lock, and then no new incarnation could write before it is thawed.

The release waits for the zombie to exit; one still running ``wait_s`` later is killed, and
the outcome says so. Healing releases every zombie the same way.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from sealcheck.core.roles import SUT
from sealcheck.nemeses.api import (
    Action,
    Mark,
    Nemesis,
    PlanInfo,
    Replaceable,
    Target,
    wait_fired,
)


class Zombie(Nemesis):
    """Stall and replace the incarnation early in the window; its stall ends later."""

    name = "zombie"
    requires = frozenset({"failpoints"})
    roles = frozenset({SUT.name})

    def __init__(self, info: PlanInfo, wait_s: float = 20.0) -> None:
        self.point, self.wait_s = info.failpoints.stall, wait_s

    @property
    def marks(self) -> Mapping[str, Mark]:
        """An interval: two incarnations alive (the old one stalled)."""
        return {
            "zombie-start": Mark("start", "zombie writer", group="zombie"),
            "zombie-release": Mark("end", "zombie writer", opens="zombie-start", group="zombie"),
        }

    def plan(self, rng: random.Random, start_s: float, window_s: float) -> list[Action]:
        """Stall early in the window for 3.5-5 s — longer than a new incarnation takes to
        start and seal a step (~2 s with a Spark Connect server), so the new one writes first
        and the zombie's write is the stale one. Windows longer than 3 s (a system that
        restarts slower) stretch the stall with them, up to 70% of the window."""
        if self.point is None:
            return []
        at = start_s + rng.uniform(0, window_s / 4)
        stall_s = rng.uniform(3.5, 5.0)
        if window_s > 3.0:  # a system given longer windows restarts slower: stall longer
            stall_s = min(stall_s * window_s / 3.0, 0.7 * window_s)
        return [
            self._act(at, "zombie-start", failpoint=self.point, stall_ms=int(stall_s * 1000)),
            self._act(at + stall_s, "zombie-release"),
        ]

    def _node(self, target: Target) -> Replaceable:
        node = target.nodes(SUT.name)[0]
        if not isinstance(node, Replaceable):
            raise TypeError(f"the {SUT.name} node {node!r} cannot be replaced while it runs")
        return node

    def invoke(self, action: Action, target: Target) -> dict[str, Any]:
        """Stall the running incarnation and replace it, or wait for the zombies to end."""
        if action.f == "zombie-release":
            return self._release(target)
        point, ms = action.value["failpoint"], int(action.value["stall_ms"])
        sealed = target.sealed()
        target.failpoints.arm(f"{point}=sleep({ms})@1")
        # consumed (the file removed) once an incarnation stalls there; an incarnation still
        # starting on a loaded machine is waited for (progress, not time: wait_fired)
        waited = wait_fired(target, 0.0, sealed)
        if target.failpoints.disarm():
            why = f"no incarnation reached {point} within {waited:.0f}s"
            return {"zombie": None, "outcome": "skipped", "why": why}
        zombie = self._node(target).replace()
        if zombie is None:
            return {"zombie": None, "outcome": "skipped", "why": "the stalled incarnation died"}
        return {"zombie": zombie, "outcome": "happened"}

    def _release(self, target: Target) -> dict[str, Any]:
        released = self._node(target).release(self.wait_s)
        if not released:
            return {"outcome": "skipped", "why": "no zombie was left"}
        stuck = [z["zombie"] for z in released if z["killed"]]
        why = (
            f"zombie {stuck} was still running {self.wait_s:.0f}s after its stall: killed"
            if stuck
            else "zombie exit codes " + ", ".join(str(z["code"]) for z in released)
        )
        return {"released": released, "outcome": "happened", "why": why}

    def heal(self, target: Target) -> list[str]:
        """Wait for every zombie to end."""
        out = []
        for z in self._node(target).release(self.wait_s):
            how = " after a kill" if z["killed"] else ""
            out.append(f"released zombie {z['zombie']} (exit {z['code']}){how}")
        return out
