"""``indeterminate``: a storage operation that happened but reported failure.

Materialize's persist tests wrap storage in an "unreliable" layer that fails operations after
performing them; here the system under test's *commit failpoints* — the points right after a
durable write returned (``PlanInfo.commit_failpoints``) — are armed with the ``error`` action,
so the write is durable and the caller sees an exception instead of success. A correct system
treats the outcome as unknown (the upsert source crashes, restarts and finds out from the store); a
system that retries blindly writes twice. Like ``failpoint``, an armed point that has not
fired by the next fault is disarmed (outcome ``not-reached``; nothing else is done).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from sealcheck.core.roles import SUT
from sealcheck.nemeses.api import Action, Mark, Nemesis, PlanInfo, Target, chance_s, wait_fired


class Indeterminate(Nemesis):
    """Arm one commit failpoint with ``error`` early in the window (seeded choice)."""

    name = "indeterminate"
    requires = frozenset({"failpoints"})
    roles = frozenset({SUT.name})

    def __init__(self, info: PlanInfo) -> None:
        self.points = tuple(info.failpoints.commit)
        self._sealed_at_arm = 0  # steps sealed when the pending point was armed

    @property
    def marks(self) -> Mapping[str, Mark]:
        """An instant: the failed reply."""
        return {"fail-commit-reply": Mark("instant", "commit reply lost")}

    def plan(self, rng: random.Random, start_s: float, window_s: float) -> list[Action]:
        """One commit whose reply is lost, at a seeded point."""
        if not self.points:
            return []
        point = rng.choice(self.points)
        at = start_s + rng.uniform(0, window_s / 4)
        more = {"chance_s": c} if (c := chance_s(window_s)) is not None else {}
        return [self._act(at, "fail-commit-reply", failpoint=point, **more)]

    def invoke(self, action: Action, target: Target) -> dict[str, Any]:
        """Arm it; pending until the next write through it."""
        self._sealed_at_arm = target.sealed()
        out = target.failpoints.arm(f"{action.value['failpoint']}=error@1")
        return {**out, "outcome": "pending"}

    def resolve(self, action: Action, target: Target, waited_s: float) -> dict[str, Any]:
        """Happened when the armed point was consumed, else disarmed (once it has had its
        chance: :func:`~sealcheck.nemeses.api.wait_fired`)."""
        waited_s = wait_fired(target, waited_s, self._sealed_at_arm, action.value.get("chance_s"))
        if not target.failpoints.armed() or not target.failpoints.disarm():
            return {"outcome": "happened", "fired": action.value["failpoint"]}
        return {
            "outcome": "not-reached",
            "why": f"no write passed {action.value['failpoint']} within {waited_s:.1f}s",
        }

    def heal(self, target: Target) -> list[str]:
        """Disarm a point that has not fired."""
        return ["disarmed an unfired commit failure"] if target.failpoints.disarm() else []
