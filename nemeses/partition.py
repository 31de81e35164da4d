"""``partition``: cut a network link for a while — pipeline↔Kafka, pipeline↔PostgreSQL, or
one broker isolated from the other two — with iptables rules inside a container's network
namespace (containers backend). Healing removes exactly the rules that were added."""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from sealcheck.nemeses.api import Action, Mark, Nemesis, Partitions, PlanInfo, Target, settled


class Partition(Nemesis):
    """Cut one seeded link early in the window, restore it after 20-50% of it."""

    name = "partition"
    requires = frozenset({"partition", "database"})

    @property
    def marks(self) -> Mapping[str, Mark]:
        """An interval: cut until restored."""
        return {
            "start-partition": Mark("start", "partition", group="partition"),
            "end-partition": Mark("end", "partition", opens="start-partition", group="partition"),
        }

    def __init__(self, info: PlanInfo) -> None:
        self.kinds = ["pipeline-kafka", "pipeline-postgres"]
        if info.brokers >= 3:
            self.kinds.append("broker")
        self.brokers = info.brokers

    def plan(self, rng: random.Random, start_s: float, window_s: float) -> list[Action]:
        """One cut and its end."""
        kind = rng.choice(self.kinds)
        broker = rng.randrange(self.brokers)
        return self._interval(
            rng, start_s, window_s, "start-partition", "end-partition", kind=kind, broker=broker
        )

    def invoke(self, action: Action, target: Target) -> dict[str, Any]:
        """Cut or restore."""
        kind, broker = str(action.value["kind"]), int(action.value["broker"])
        cuts = _cuts(target)
        if action.f == "start-partition":
            done = cuts.cut(kind, broker)
            return settled(done, "cut", str(done.get("reason", "the link was not cut")))
        return settled(cuts.restore(kind, broker), "healed", "the link was not cut")

    def heal(self, target: Target) -> list[str]:
        """Remove every cut still in place."""
        return _cuts(target).heal()


def _cuts(target: Target) -> Partitions:
    if target.partitions is None:  # refused before the run (requires); a bug if reached
        raise RuntimeError("this backend cannot partition; use --backend containers")
    return target.partitions
