"""``lost-writes``: a crash that also loses the page cache — everything written to the store
but not yet fsynced is gone, as after a power cut.

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

from nemeses.api import Action, Mark, Nemesis, PlanInfo, Target


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
        frozen = node.pause()
        if frozen is None:
            return {"outcome": "skipped", "why": "no pipeline incarnation was running"}
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
