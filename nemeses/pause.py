"""``pause``, ``pause-kafka``: freeze a node of one role, thaw it a seeded while later.

A paused pipeline stalls mid-step and then carries on as if nothing happened (SIGSTOP /
SIGCONT locally, the cgroup freezer in containers). A frozen broker keeps its sockets open but
answers nothing — a harder fault for clients than a dead one, whose connections are refused.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from nemeses.api import Action, Mark, Nemesis, PlanInfo, Target, settled
from nemeses.kill import count, index_key


class Pause(Nemesis):
    """Freeze a node of ``role`` early in the window, thaw it a seeded share of it later."""

    def __init__(self, name: str, role: str, info: PlanInfo) -> None:
        self.name, self.role = name, role
        self.count, self.key = count(role, info), index_key(role)
        self.requires = frozenset({"spark-cluster"} if role.startswith("spark") else ())

    @property
    def marks(self) -> Mapping[str, Mark]:
        """An interval: frozen until thawed."""
        label = f"{self.role} frozen"
        pause, resume = f"pause-{self.role}", f"resume-{self.role}"
        return {
            pause: Mark("start", label, group="pause"),
            resume: Mark("end", label, opens=pause, group="pause"),
        }

    def plan(self, rng: random.Random, start_s: float, window_s: float) -> list[Action]:
        """One freeze and its thaw (the pipeline stays frozen longer: 20-60% of the window)."""
        on, off = f"pause-{self.role}", f"resume-{self.role}"
        if self.role == "pipeline":
            return self._interval(rng, start_s, window_s, on, off, share=(0.2, 0.6))
        which: dict[str, Any] = {self.key: rng.randrange(self.count)} if self.key else {}
        return self._interval(rng, start_s, window_s, on, off, **which)

    def invoke(self, action: Action, target: Target) -> dict[str, Any]:
        """Freeze or thaw."""
        index = int(action.value.get(self.key, 0)) if self.key else 0
        node = target.nodes(self.role)[index]
        where = {self.key: index} if self.key and self.key in action.value else {}
        if action.f.startswith("pause-"):
            return settled(
                {**where, "paused": node.pause()}, "paused", f"no {self.role} was running"
            )
        return settled(
            {**where, "resumed": node.resume()},
            "resumed",
            f"the {self.role} was not frozen any more (killed and replaced, or never frozen)",
        )

    def heal(self, target: Target) -> list[str]:
        """Thaw every frozen node of the role."""
        return [
            f"resumed {n.name} ({i})"
            for n in target.nodes(self.role)
            if (i := n.resume()) is not None
        ]
