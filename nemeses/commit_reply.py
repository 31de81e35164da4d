"""``lose-commit-reply``: the database performs a commit and its reply never arrives.

The network version of ``indeterminate`` (capabilities ``database`` and ``partition``: the
containers backend). A one-way cut is placed in the running incarnation's network namespace
that arms itself in the kernel at the incarnation's next write commit: the ``COMMIT`` reaches
PostgreSQL, which commits it, and from that packet on every packet from PostgreSQL is dropped
(:class:`infra.containers.cuts.CommitReplyCut`). The client waits for a reply that never comes
and gives up (the pipeline's connection has a TCP user time-out), without knowing whether the
commit happened. A correct system treats that as unknown: it crashes, restarts in a new
container (the cut stays behind in the old namespace) and learns the outcome from the store.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from nemeses.api import Action, Mark, Nemesis, PlanInfo, Target

KIND = "commit-reply"


class LoseCommitReply(Nemesis):
    """Cut the database's replies from the running incarnation's next commit on."""

    name = "lose-commit-reply"
    requires = frozenset({"database", "partition"})

    def __init__(self, info: PlanInfo) -> None:
        del info  # any write commit of the system under test will do

    @property
    def marks(self) -> Mapping[str, Mark]:
        """An instant: the cut that arms at the next commit."""
        return {"cut-commit-reply": Mark("instant", "commit reply cut")}

    def plan(self, rng: random.Random, start_s: float, window_s: float) -> list[Action]:
        """One cut early in the window."""
        return [self._act(start_s + rng.uniform(0, window_s / 4), "cut-commit-reply")]

    def invoke(self, action: Action, target: Target) -> dict[str, Any]:
        """Place the cut; pending until a commit arms it."""
        cuts = target.partitions
        if cuts is None:
            return {"outcome": "skipped", "why": "this backend cannot cut network links"}
        done = cuts.cut(KIND, 0)
        if done.get("cut") is None:
            return {**done, "outcome": "skipped", "why": done.get("reason", "not cut")}
        return {**done, "outcome": "pending"}

    def resolve(self, action: Action, target: Target, waited_s: float) -> dict[str, Any]:
        """Happened when a commit armed the cut (it stays with that incarnation, which cannot
        hear the database any more); else the cut is removed."""
        cuts = target.partitions
        if cuts is None:
            return {"outcome": "skipped", "why": "this backend cannot cut network links"}
        if cuts.fired(KIND):
            return {"outcome": "happened"}
        cuts.restore(KIND, 0)
        return {"outcome": "not-reached", "why": f"no write committed within {waited_s:.1f}s"}

    def heal(self, target: Target) -> list[str]:
        """Remove a cut still in place (the incarnation it caught may still be waiting)."""
        cuts = target.partitions
        if cuts is None:
            return []
        done = cuts.restore(KIND, 0)
        return [f"removed the commit-reply cut ({done['deleted']} rules)"] if done["healed"] else []
