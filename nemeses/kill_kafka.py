"""``kill-kafka``: SIGKILL one broker, start it again a seeded while later. With one broker the
pipeline and producers must wait; with three (replication 3, min ISR 2) they carry on."""

from __future__ import annotations

import random
from typing import Any

from nemeses.api import Action, Nemesis, PlanInfo, Target, settled


class KillKafka(Nemesis):
    """Kill a seeded broker, restart it within the window."""

    name = "kill-kafka"

    def __init__(self, info: PlanInfo) -> None:
        self.brokers = info.brokers

    def plan(self, rng: random.Random, start_s: float, window_s: float) -> list[Action]:
        """Kill early in the window, restart after 20-50% of it."""
        broker = rng.randrange(self.brokers)
        return self._interval(rng, start_s, window_s, "kill-broker", "start-broker", broker=broker)

    def invoke(self, action: Action, target: Target) -> dict[str, Any]:
        """Kill or start the broker."""
        broker = int(action.value["broker"])
        if action.f == "kill-broker":
            return settled(target.broker_kill(broker), "killed", "the broker was not running")
        return settled(target.broker_start(broker), "started", "the broker was running")

    def heal(self, target: Target) -> list[str]:
        """Start every broker that is down."""
        down = target.brokers_down()
        for i in down:
            target.broker_start(i)
        return [f"started broker {i}" for i in down]
