"""``lost-writes`` and ``lost-writes-kafka``: a crash that also loses the page cache —
everything written to the store (or to a broker's log directory) but not yet fsynced is gone,
as after a power cut.

A kill -9 never loses what the OS page cache holds, so a store that commits without fsync
passes every kill. This nemesis needs the store on a lazy filesystem (capability
``lazy-disk``: :mod:`infra.lazyfs`, which keeps un-fsynced writes apart). Each action freezes
the running incarnation (so nothing is written mid-way), drops every un-fsynced write, then
kills it; the supervisor starts the next incarnation on what was durable. A correct system
fsyncs before it reports a commit, so nothing it sealed is lost; one that does not (``--broken
non-durable-commits``) loses sealed steps, and the uppers it reported go back.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from nemeses.api import Action, Disk, Mark, Nemesis, Node, PlanInfo, Target
from nemeses.kill import start_node


class LostWrites(Nemesis):
    """Freeze, drop un-fsynced writes, kill: once per window, at a seeded moment."""

    name = "lost-writes"
    requires = frozenset({"lazy-disk"})

    def __init__(self, info: PlanInfo) -> None:
        del info  # nothing of the system's shape matters: any moment is a moment to lose power

    @property
    def marks(self) -> Mapping[str, Mark]:
        """An instant: the power cut."""
        return {"lose-unsynced": Mark("instant", "un-fsynced writes lost")}

    def plan(self, rng: random.Random, start_s: float, window_s: float) -> list[Action]:
        """One power cut of the store's disk, in the window's first half."""
        return [self._act(start_s + rng.uniform(0, window_s / 2), "lose-unsynced", disk="store")]

    def invoke(self, action: Action, target: Target) -> dict[str, Any]:
        """Freeze the incarnation, drop the disk's un-fsynced writes, kill the incarnation."""
        name = str(action.value.get("disk", "store"))
        disk = target.disks().get(name)
        if disk is None:
            return {"outcome": "skipped", "why": f"no lazy disk {name!r} in this run"}
        node = target.nodes("pipeline")[0]
        return power_cut(node, disk, "no pipeline incarnation was running")


def power_cut(node: Node, disk: Disk, down: str) -> dict[str, Any]:
    """Freeze ``node`` (so nothing is written mid-way), drop ``disk``'s un-fsynced writes, kill
    the node: what happened, or ``skipped`` with ``down`` when the node was not running."""
    frozen = node.pause()
    if frozen is None:
        return {"outcome": "skipped", "why": down}
    try:
        dropped = disk.drop().get("dropped", {})
    finally:
        killed = node.kill()
        node.resume()  # forget the freeze: what was frozen is dead now
    return {
        "outcome": "happened",
        "frozen": frozen,
        "killed": killed,
        "dropped_files": dropped.get("files"),
        "dropped_bytes": dropped.get("bytes"),
        "dropped_paths": dropped.get("paths"),
    }


class LostBrokerWrites(Nemesis):
    """``lost-writes-kafka``: a power cut of one broker — freeze it, drop what its log
    directory has not fsynced, kill it — and power it on again later in the window.

    Kafka acknowledges a write (even with ``acks=all``) once the in-sync replicas have it in
    their page cache; it fsyncs only when a segment rolls or ``flush.messages`` /
    ``flush.ms`` say so (by default never). With one broker, a power cut therefore loses
    acknowledged records, and the offsets they had are handed to new records after the
    restart: the completeness checker reports the lost acknowledged writes and the sealed
    state disagrees with the topic. That is the broker's configuration, not the system under
    test: with three brokers (replication 3, min ISR 2) the other replicas keep what one
    broker loses. Needs the brokers' log directories on lazy disks (capability
    ``broker-lazy-disk``: the local backend).
    """

    name = "lost-writes-kafka"
    requires = frozenset({"broker-lazy-disk"})
    #: a broker needs ~15 s to recover its log after a power cut on this 2-core machine, and
    #: the producers a while to write again: windows that come sooner stay quiet, so every cut
    #: has something to lose
    SPACING_S = 20.0

    def __init__(self, info: PlanInfo) -> None:
        self.count = info.brokers
        self._quiet_until = 0.0  # planning state: windows are planned in time order

    @property
    def marks(self) -> Mapping[str, Mark]:
        """An interval: from the power cut to the broker serving again."""
        down = "broker power cut"
        return {
            "power-cut-broker": Mark("start", down, group="outage"),
            "power-on-broker": Mark("end", down, opens="power-cut-broker", group="outage"),
        }

    def plan(self, rng: random.Random, start_s: float, window_s: float) -> list[Action]:
        """A cut early in the window of a seeded broker, power back after 20-50% of it; no
        cut in a window that starts within :attr:`SPACING_S` of the previous cut."""
        if start_s < self._quiet_until:
            return []
        broker = rng.randrange(self.count)
        on, off = "power-cut-broker", "power-on-broker"
        actions = self._interval(rng, start_s, window_s, on, off, broker=broker)
        self._quiet_until = actions[0].at_s + self.SPACING_S
        return actions

    def invoke(self, action: Action, target: Target) -> dict[str, Any]:
        """Cut the power (freeze, drop, kill), or start the broker again."""
        index = int(action.value.get("broker", 0))
        node = target.nodes("broker")[index]
        if action.f == "power-on-broker":
            return start_node(node, f"{node.name} was running", broker=index)
        disk = target.disks().get(node.name)
        if disk is None:
            return {"outcome": "skipped", "why": f"{node.name} has no lazy disk in this run"}
        return {"broker": index, **power_cut(node, disk, f"{node.name} was down")}

    def heal(self, target: Target) -> list[str]:
        """Start every broker that is down."""
        return [f"started {n.name}" for n in target.nodes("broker") if n.start() is not None]
