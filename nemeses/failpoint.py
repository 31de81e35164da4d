"""``failpoint``: make the system under test die at one exact step.

Each action arms one failpoint (``crash`` on its next pass) in the running incarnation (role
``sut``); the failpoints are taken in a seeded order that covers every point the system defines
before any repeats, so a run with as many failpoint windows as failpoints covers them all.
Points the system passes only once it has run a while (compaction, in the upsert source) come
last in each cover. Points the system passes only at start-up (``rehydrate.mid`` in the upsert
source) are armed and then the incarnation is killed, so the next one dies there. The
supervisor records which failpoint fired with each exit.

The fault is guaranteed: a failpoint that has not fired by the time the next fault is due
(or the fault phase ends) — and has had its chance: armed 3 s and two steps sealed since, or
20 s (1.5 windows when windows are longer; :func:`sealcheck.nemeses.api.wait_fired`) — is disarmed
and replaced by a kill at that moment, and the history's ``outcome`` op says which of the two
happened.
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
    Target,
    chance_s,
    settled,
    wait_fired,
)


class Failpoint(Nemesis):
    """Arm one failpoint per window, in a seeded order covering them all."""

    name = "failpoint"
    requires = frozenset({"failpoints"})
    roles = frozenset({SUT.name})

    def __init__(self, info: PlanInfo) -> None:
        self.points = tuple(sorted(info.failpoints.names))
        self.startup, self.late = info.failpoints.startup, info.failpoints.late
        self._order: list[str] = []
        self._sealed_at_arm = 0  # steps sealed when the pending point was armed

    @property
    def marks(self) -> Mapping[str, Mark]:
        """Arming is an instant (the crash it causes shows as a restart)."""
        return {"arm-failpoint": Mark("instant", "failpoint armed", group="failpoint")}

    def plan(self, rng: random.Random, start_s: float, window_s: float) -> list[Action]:
        """Arm the next point of the seeded cover early in the window (nothing for a system
        without failpoints: the run is refused for it, in one line, by the validation)."""
        if not self.points:
            return []
        if not self._order:  # a seeded cover, the points passed only later at its end
            early = [p for p in self.points if p not in self.late]
            late = [p for p in self.points if p in self.late]
            rng.shuffle(early)
            rng.shuffle(late)
            self._order = early + late
        point = self._order.pop(0)
        at = start_s + rng.uniform(0, window_s / 4)
        more = {"chance_s": c} if (c := chance_s(window_s)) is not None else {}
        restart = point in self.startup
        return [self._act(at, "arm-failpoint", failpoint=point, restart=restart, **more)]

    def invoke(self, action: Action, target: Target) -> dict[str, Any]:
        """Arm it; kill the incarnation too for a start-up point. Pending until it fires."""
        point = action.value["failpoint"]
        self._sealed_at_arm = target.sealed()
        out = target.failpoints.arm(f"{point}=crash@1")
        if action.value.get("restart"):
            out["killed"] = target.nodes(SUT.name)[0].kill()
        return {**out, "outcome": "pending"}

    def resolve(self, action: Action, target: Target, waited_s: float) -> dict[str, Any]:
        """Fired (the incarnation consumed the armed point by crashing there), or disarmed and
        replaced by a kill once it has had its chance
        (:func:`~sealcheck.nemeses.api.wait_fired`)."""
        point = action.value["failpoint"]
        waited_s = wait_fired(target, waited_s, self._sealed_at_arm, action.value.get("chance_s"))
        if not target.failpoints.armed() or not target.failpoints.disarm():
            return {"outcome": "happened", "fired": point}
        killed = settled(
            {"killed": target.nodes(SUT.name)[0].kill()},
            "killed",
            "no incarnation was running to kill",
        )
        if killed["outcome"] == "happened":
            killed["outcome"] = "replaced-by-kill"
            killed["why"] = (
                f"the system under test did not pass {point} within {waited_s:.1f}s, so it "
                "was disarmed and the incarnation killed instead"
            )
        return killed

    def heal(self, target: Target) -> list[str]:
        """Disarm a failpoint that has not fired yet."""
        return ["disarmed an unfired failpoint"] if target.failpoints.disarm() else []
