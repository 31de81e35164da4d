"""``kill``, ``kill-kafka``, ``kill-postgres``: SIGKILL a node of one role.

The pipeline (the system under test's running incarnation) is killed at a seeded moment of
the window's first half and restarted by the supervisor, so every kill is a crash-and-recover
cycle. A broker or the database is killed early in the window and started again a seeded while
later; healing starts whatever is still down. With one broker the pipeline and producers must
wait; with three (replication 3, min ISR 2) they carry on.
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping
from typing import Any

from nemeses.api import Action, Mark, Nemesis, Node, PlanInfo, Target, settled

#: role -> (the noun in action names, the capability the role needs)
ROLES = {
    "pipeline": ("pipeline", None),
    "broker": ("broker", None),
    "database": ("postgres", "database"),
}


def start_node(node: Node, running: str, **where: Any) -> dict[str, Any]:
    """Start ``node`` and wait until it serves: ``started`` and ``ready_s``, or ``skipped``
    with ``running`` when it was already running."""
    began = time.monotonic()
    done: dict[str, Any] = {**where, "started": node.start()}
    if done["started"] is not None:
        done["ready_s"] = round(time.monotonic() - began, 2)
    return settled(done, "started", running)


class Kill(Nemesis):
    """SIGKILL a node of ``role`` (a seeded one when the role has several)."""

    def __init__(self, name: str, role: str, info: PlanInfo) -> None:
        self.name, self.role = name, role
        self.noun, need = ROLES[role]
        self.requires = frozenset({need} if need else ())
        self.count = info.brokers if role == "broker" else 1

    @property
    def marks(self) -> Mapping[str, Mark]:
        """A pipeline kill is an instant; a broker or database outage an interval."""
        kill, start = f"kill-{self.noun}", f"start-{self.noun}"
        if self.role == "pipeline":
            return {kill: Mark("instant", "kill", group="kill")}
        down = f"{self.noun} down"
        return {
            kill: Mark("start", down, group="outage"),
            start: Mark("end", down, opens=kill, group="outage"),
        }

    def plan(self, rng: random.Random, start_s: float, window_s: float) -> list[Action]:
        """The pipeline: one kill in the window's first half. Others: a kill early in the
        window, its restart after 20-50% of it."""
        if self.role == "pipeline":
            return [self._act(start_s + rng.uniform(0, window_s / 2), f"kill-{self.noun}")]
        on, off = f"kill-{self.noun}", f"start-{self.noun}"
        if self.role == "broker":
            return self._interval(rng, start_s, window_s, on, off, broker=rng.randrange(self.count))
        return self._interval(rng, start_s, window_s, on, off)

    def invoke(self, action: Action, target: Target) -> dict[str, Any]:
        """Kill, or start again."""
        index = int(action.value.get("broker", 0))
        node = target.nodes(self.role)[index]
        where = {"broker": index} if "broker" in action.value else {}
        if action.f.startswith("kill-"):
            nothing = f"no {self.noun} was running" + (
                " (even after waiting for one)" if self.role == "pipeline" else ""
            )
            return settled({**where, "killed": node.kill()}, "killed", nothing)
        return start_node(node, f"the {self.noun} was running", **where)

    def heal(self, target: Target) -> list[str]:
        """Start every node of the role that is down (the supervisor restarts the pipeline)."""
        if self.role == "pipeline":
            return []
        return [f"started {n.name}" for n in target.nodes(self.role) if n.start() is not None]
