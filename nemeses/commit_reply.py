"""``lose-commit-reply``: the database performs a commit and its reply never arrives.

The network version of ``indeterminate`` (capabilities ``database`` and ``partition``: the
containers backend). A one-way cut is placed in the running incarnation's network namespace
that arms itself in the kernel at the incarnation's next commit: the ``COMMIT`` reaches
PostgreSQL, which commits it, and from that packet on every packet from PostgreSQL is dropped
(:class:`sealcheck.infra.containers.cuts.CommitReplyCut`). The client waits for a reply that
never comes and gives up (the upsert source's connection has a TCP user time-out), without
knowing whether the commit happened. A correct system treats that as unknown: it crashes,
restarts in a new container (the cut stays behind in the old namespace) and learns the outcome
from the store.
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping
from typing import Any

from sealcheck.core.roles import SUT
from sealcheck.nemeses.api import Action, Mark, Nemesis, PlanInfo, Target

KIND = "commit-reply"


class LoseCommitReply(Nemesis):
    """Cut the database's replies from the running incarnation's next commit on."""

    name = "lose-commit-reply"
    requires = frozenset({"database", "partition"})
    #: the database's replies to the incarnation: a run whose system keeps no store in the
    #: database has no ``database`` role and is refused
    roles = frozenset({SUT.name, "database"})
    #: how long a cut may wait for a commit in all: a step of the upsert source in a container
    #: takes 2-3 s, longer than a short fault window, so resolving waits for the rest
    WAIT_S = 8.0

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
        hear the database any more), waiting up to :attr:`WAIT_S` after the cut for one; else
        the cut is removed."""
        cuts = target.partitions
        if cuts is None:
            return {"outcome": "skipped", "why": "this backend cannot cut network links"}
        deadline = time.monotonic() + max(0.0, self.WAIT_S - waited_s)
        while not cuts.fired(KIND):
            if time.monotonic() >= deadline:
                cuts.restore(KIND, 0)
                waited = max(waited_s, self.WAIT_S)
                return {"outcome": "not-reached", "why": f"no write committed within {waited:.1f}s"}
            time.sleep(0.1)
        return {"outcome": "happened"}

    def heal(self, target: Target) -> list[str]:
        """Remove a cut still in place (the incarnation it caught may still be waiting)."""
        cuts = target.partitions
        if cuts is None:
            return []
        done = cuts.restore(KIND, 0)
        return [f"removed the commit-reply cut ({done['deleted']} rules)"] if done["healed"] else []
