"""``lost-writes`` and ``lost-writes-kafka``: a crash that also loses the page cache —
everything written to the store (or to a broker's log directory) but not yet fsynced is gone,
as after a power cut.

A kill -9 never loses what the OS page cache holds, so a store that commits without fsync
passes every kill. This nemesis needs the store on a lazy filesystem (capability
``lazy-disk``: :mod:`sealcheck.infra.lazyfs`, which keeps un-fsynced writes apart). Each action
freezes
the running incarnation (so nothing is written mid-way), drops every un-fsynced write, then
kills it; the supervisor starts the next incarnation on what was durable. A correct system
fsyncs before it reports a commit, so nothing it sealed is lost; one that does not (``--broken
non-durable-commits``) loses sealed steps, and the uppers it reported go back.

A cut with nothing un-fsynced loses nothing: a store that fsyncs every commit holds un-fsynced
pages only while a write is in flight. So a cut waits — up to the rest of its window
(``wait_s``) — until the disk's counters show un-fsynced bytes, freezes the writer, and cuts if
they are still there under the freeze (else it thaws it and looks again). At the deadline it
cuts anyway. The op's ``effect`` says whether it bit: the bytes and files dropped, or "no
un-fsynced data when the power was cut" (``sealcheck.nemeses.evidence``).
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping
from typing import Any

from sealcheck.core.nodes import Disk, Node
from sealcheck.core.roles import SUT
from sealcheck.nemeses.api import Action, Mark, Nemesis, PlanInfo, Target
from sealcheck.nemeses.evidence import effect
from sealcheck.nemeses.kill import start_node

#: how long a cut planned before ``wait_s`` was in its value waits for un-fsynced data
DEFAULT_WAIT_S = 1.0
#: how often the disk's counters are read while waiting
POLL_S = 0.005


class LostWrites(Nemesis):
    """Freeze, drop un-fsynced writes, kill: once per window, at a seeded moment."""

    name = "lost-writes"
    requires = frozenset({"lazy-disk", "power-cut"})
    roles = frozenset({SUT.name})

    def __init__(self, info: PlanInfo) -> None:
        del info  # nothing of the system's shape matters: any moment is a moment to lose power

    @property
    def marks(self) -> Mapping[str, Mark]:
        """An instant: the power cut."""
        return {"lose-unsynced": Mark("instant", "un-fsynced writes lost")}

    def plan(self, rng: random.Random, start_s: float, window_s: float) -> list[Action]:
        """One power cut of the store's disk, in the window's first half; it may wait for
        un-fsynced data until the window ends (``wait_s``)."""
        at = start_s + rng.uniform(0, window_s / 2)
        wait_s = max(0.0, int((start_s + window_s - at) * 10) / 10)
        return [self._act(at, "lose-unsynced", disk="store", wait_s=wait_s)]

    def invoke(self, action: Action, target: Target) -> dict[str, Any]:
        """Once un-fsynced writes are pending (or ``wait_s`` passed): freeze the incarnation,
        drop the disk's un-fsynced writes, kill the incarnation."""
        name = str(action.value.get("disk", "store"))
        disk = target.disks().get(name)
        if disk is None:
            return {"outcome": "skipped", "why": f"no lazy disk {name!r} in this run"}
        node = target.nodes(SUT.name)[0]
        wait_s = float(action.value.get("wait_s", DEFAULT_WAIT_S))
        return power_cut(node, disk, "no incarnation was running", wait_s)


def pending(disk: Disk) -> int | None:
    """Un-fsynced bytes the disk keeps now (None: it has no counters)."""
    counters = getattr(disk, "counters", None)
    if counters is None:
        return None
    kept = counters().get("kept_bytes")
    return int(kept) if isinstance(kept, int) else None


def freeze_when_pending(node: Node, disk: Disk, wait_s: float) -> tuple[Any, int | None, float]:
    """Freeze ``node`` once ``disk`` keeps un-fsynced bytes under the freeze, or at once when
    ``wait_s`` has passed: the frozen id (None: nothing ran), the bytes pending when frozen
    and how long it waited."""
    began = time.monotonic()
    deadline = began + wait_s
    while True:
        late = time.monotonic() >= deadline
        if late or pending(disk):
            frozen = node.pause()
            if frozen is None:
                return None, None, time.monotonic() - began
            kept = pending(disk)
            if late or kept:
                return frozen, kept, time.monotonic() - began
            node.resume()  # fsynced before the freeze landed: thaw it, look again
        time.sleep(POLL_S)


def power_cut(node: Node, disk: Disk, down: str, wait_s: float = 0.0) -> dict[str, Any]:
    """Freeze ``node`` (so nothing is written mid-way) once un-fsynced writes are pending
    (waiting up to ``wait_s``), drop ``disk``'s un-fsynced writes, kill the node: what
    happened with its ``effect``, or ``skipped`` with ``down`` when the node was not
    running."""
    frozen, kept, waited = freeze_when_pending(node, disk, wait_s)
    if frozen is None:
        return {"outcome": "skipped", "why": down}
    try:
        dropped = disk.drop().get("dropped", {})
    finally:
        killed = node.kill()
        node.resume()  # forget the freeze: what was frozen is dead now
    lost = dropped.get("bytes") or 0
    if lost > 0:
        bit = effect(True, f"dropped {lost} un-fsynced bytes of {dropped.get('files')} files")
    else:
        bit = effect(False, "no un-fsynced data when the power was cut")
    return {
        "outcome": "happened",
        "frozen": frozen,
        "killed": killed,
        "pending_bytes": kept,
        "waited_s": round(waited, 3),
        "dropped_files": dropped.get("files"),
        "dropped_bytes": dropped.get("bytes"),
        "dropped_paths": dropped.get("paths"),
        "effect": bit,
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
    roles = frozenset({"broker"})
    #: a broker needs ~15 s to recover its log after a power cut on this 2-core machine, and
    #: the producers a while to write again: windows that come sooner stay quiet, so every cut
    #: has something to lose
    SPACING_S = 20.0

    def __init__(self, info: PlanInfo) -> None:
        self.count = info.role("broker").count
        self._quiet_until = 0.0  # planning state: windows are planned in time order

    @property
    def marks(self) -> Mapping[str, Mark]:
        """An interval: from the power cut to the broker serving again."""
        down = "broker power cut"
        return {
            "power-cut-broker": Mark("start", down, group="outage", which=("broker",)),
            "power-on-broker": Mark(
                "end", down, opens="power-cut-broker", group="outage", which=("broker",)
            ),
        }

    def plan(self, rng: random.Random, start_s: float, window_s: float) -> list[Action]:
        """A cut early in the window of a seeded broker, power back after 20-50% of it; no
        cut in a window that starts within :attr:`SPACING_S` of the previous cut."""
        if start_s < self._quiet_until or self.count < 1:
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
        wait_s = float(action.value.get("wait_s", DEFAULT_WAIT_S))
        return {"broker": index, **power_cut(node, disk, f"{node.name} was down", wait_s)}

    def heal(self, target: Target) -> list[str]:
        """Start every broker that is down."""
        return [f"started {n.name}" for n in target.nodes("broker") if n.start() is not None]
