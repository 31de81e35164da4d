"""``pause-kafka``: freeze one broker (SIGSTOP locally, ``docker pause`` in containers) and
thaw it a seeded while later. A frozen broker keeps its sockets open but answers nothing — a
harder fault for clients than a dead one, whose connections are refused at once."""

from __future__ import annotations

import random
from typing import Any

from nemeses.api import Action, Nemesis, PlanInfo, Target, settled


class PauseKafka(Nemesis):
    """Freeze a seeded broker early in the window, thaw it after 20-50% of it."""

    name = "pause-kafka"

    def __init__(self, info: PlanInfo) -> None:
        self.brokers = info.brokers

    def plan(self, rng: random.Random, start_s: float, window_s: float) -> list[Action]:
        """One freeze and its thaw."""
        broker = rng.randrange(self.brokers)
        return self._interval(
            rng, start_s, window_s, "pause-broker", "resume-broker", broker=broker
        )

    def invoke(self, action: Action, target: Target) -> dict[str, Any]:
        """Freeze or thaw."""
        broker = int(action.value["broker"])
        if action.f == "pause-broker":
            return settled(target.broker_pause(broker), "paused", "the broker was not running")
        return settled(target.broker_resume(broker), "resumed", "the broker was not frozen")

    def heal(self, target: Target) -> list[str]:
        """Thaw every frozen broker."""
        thawed = [target.broker_resume(i) for i in range(target.brokers)]
        return [f"resumed broker {t['broker']}" for t in thawed if t.get("resumed") is not None]
