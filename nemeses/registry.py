"""The registry of nemeses: adding one is one module plus one line in :data:`NEMESES`.

A name maps to a factory of the nemesis from what planning may know (:class:`PlanInfo`);
kills and pauses are one class each, parametrised by the role they act on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from sealcheck.nemeses.api import Mark, Nemesis, PlanInfo
from sealcheck.nemeses.commit_reply import LoseCommitReply
from sealcheck.nemeses.failpoint import Failpoint
from sealcheck.nemeses.indeterminate import Indeterminate
from sealcheck.nemeses.kill import Kill
from sealcheck.nemeses.lost_writes import LostBrokerWrites, LostWrites
from sealcheck.nemeses.partition import Partition
from sealcheck.nemeses.pause import Pause
from sealcheck.nemeses.zombie import Zombie

NEMESES: dict[str, Callable[[PlanInfo], Nemesis]] = {
    "kill": lambda info: Kill("kill", "pipeline", info),
    "failpoint": Failpoint,
    "pause": lambda info: Pause("pause", "pipeline", info),
    "kill-kafka": lambda info: Kill("kill-kafka", "broker", info),
    "pause-kafka": lambda info: Pause("pause-kafka", "broker", info),
    "partition": Partition,
    "kill-postgres": lambda info: Kill("kill-postgres", "database", info),
    "zombie": Zombie,
    "indeterminate": Indeterminate,
    "lose-commit-reply": LoseCommitReply,
    "lost-writes": LostWrites,
    "lost-writes-kafka": LostBrokerWrites,
    "kill-spark-worker": lambda info: Kill("kill-spark-worker", "spark-worker", info),
    "kill-executor": lambda info: Kill("kill-executor", "spark-executor", info),
    "pause-spark-worker": lambda info: Pause("pause-spark-worker", "spark-worker", info),
}


def build(names: tuple[str, ...] | list[str], info: PlanInfo) -> dict[str, Nemesis]:
    """One instance per named nemesis; an unknown name is a ValueError naming the known ones."""
    unknown = [n for n in names if n not in NEMESES]
    if unknown:
        raise ValueError(f"unknown nemesis {unknown}; known: {', '.join(NEMESES)}")
    return {n: NEMESES[n](info) for n in names}


def requirements(name: str) -> frozenset[str]:
    """The backend capabilities nemesis ``name`` needs."""
    return NEMESES[name](PlanInfo(3, ())).requires


def marks() -> Mapping[str, Mark]:
    """How the timeline draws every action of every nemesis (action names are unique)."""
    out: dict[str, Mark] = {}
    for factory in NEMESES.values():
        out.update(factory(PlanInfo(3, ())).marks)
    return out
