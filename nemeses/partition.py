"""``partition``: cut a network link for a while — the system under test from the nodes of a
role it talks to (``sut-kafka``, ``sut-database``: each role with a
:attr:`~sealcheck.core.roles.Role.link` in the run's roles), or one broker isolated from the
other two (with three or more) — with iptables rules inside a container's network namespace
(containers backend). Healing removes exactly the rules that were added."""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from sealcheck.core.nodes import Partitions
from sealcheck.core.roles import SUT, links
from sealcheck.nemeses.api import Action, Mark, Nemesis, PlanInfo, Target, settled

#: the keys of a cut's value: which link, and which broker a ``broker`` cut isolates
WHICH = ("broker", "kind")


class Partition(Nemesis):
    """Cut one seeded link early in the window, restore it after 20-50% of it."""

    name = "partition"
    requires = frozenset({"partition"})
    roles = frozenset({SUT.name, "broker"})

    @property
    def marks(self) -> Mapping[str, Mark]:
        """An interval: cut until restored."""
        return {
            "start-partition": Mark("start", "partition", group="partition", which=WHICH),
            "end-partition": Mark(
                "end", "partition", opens="start-partition", group="partition", which=WHICH
            ),
        }

    def __init__(self, info: PlanInfo) -> None:
        #: the links this run has that a cut may name: the system under test's to each role
        #: with a link, and ``broker`` with three or more brokers
        self.kinds = links(info.roles)
        self.brokers = info.role("broker").count
        if self.brokers >= 3:
            self.kinds.append("broker")

    def plan(self, rng: random.Random, start_s: float, window_s: float) -> list[Action]:
        """One cut and its end."""
        if not self.kinds or self.brokers < 1:
            return []
        kind = rng.choice(self.kinds)
        broker = rng.randrange(self.brokers)
        return self._interval(
            rng, start_s, window_s, "start-partition", "end-partition", kind=kind, broker=broker
        )

    def invoke(self, action: Action, target: Target) -> dict[str, Any]:
        """Cut or restore. A kind that is not a link of this run (:attr:`kinds`: a stored
        schedule of another run, refused before a run by validation) is skipped, never cut: a
        backend may still have that link (PostgreSQL the system keeps no store in), and a cut
        of it would count as a fault that happened without touching the system."""
        kind, broker = str(action.value["kind"]), int(action.value["broker"])
        if kind not in self.kinds:
            return settled({"kind": kind, "cut": None}, "cut", "the run has no such link")
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
