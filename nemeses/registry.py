"""The registry of nemeses: adding one is one module plus one line in :data:`NEMESES`.

A name maps to a factory of the nemesis from what planning may know (:class:`PlanInfo`: the
run's roles, the system's failpoints); kills and pauses are one class each, parametrised by the
role they act on. What a role is (how many nodes, whether it heals itself, how an action names
one) comes from the run's roles, so the registry's introspection (:func:`requirements`,
:func:`marks`) is given the roles to read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from sealcheck.core.roles import SUT, Role
from sealcheck.nemeses.api import Mark, Nemesis, PlanInfo
from sealcheck.nemeses.boundary import CrashAtBoundary
from sealcheck.nemeses.commit_reply import LoseCommitReply
from sealcheck.nemeses.crash_at_sync import CrashAtSync
from sealcheck.nemeses.failpoint import Failpoint
from sealcheck.nemeses.indeterminate import Indeterminate
from sealcheck.nemeses.kill import Kill
from sealcheck.nemeses.lost_writes import LostBrokerWrites, LostWrites
from sealcheck.nemeses.partition import Partition
from sealcheck.nemeses.pause import Pause
from sealcheck.nemeses.rollback import Rollback
from sealcheck.nemeses.upgrade import Upgrade
from sealcheck.nemeses.window import CrashInWindow
from sealcheck.nemeses.zombie import Zombie

NEMESES: dict[str, Callable[[PlanInfo], Nemesis]] = {
    "kill": lambda info: Kill("kill", SUT.name, info),
    "failpoint": Failpoint,
    "window": CrashInWindow,
    "crash-at-sync": CrashAtSync,
    "boundary": CrashAtBoundary,
    "pause": lambda info: Pause("pause", SUT.name, info),
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
    "upgrade": Upgrade,
    "rollback": Rollback,
}


def build(names: tuple[str, ...] | list[str], info: PlanInfo) -> dict[str, Nemesis]:
    """One instance per named nemesis; an unknown name is a ValueError naming the known ones."""
    unknown = [n for n in names if n not in NEMESES]
    if unknown:
        raise ValueError(f"unknown nemesis {unknown}; known: {', '.join(NEMESES)}")
    return {n: NEMESES[n](info) for n in names}


def lacking(nemesis: Nemesis, info: PlanInfo) -> list[str]:
    """The roles ``nemesis`` acts on that the run (``info.roles``) lacks: such a run cannot
    host it."""
    return sorted(r for r in nemesis.roles if r not in info.roles)


def requirements(name: str, roles: Mapping[str, Role]) -> frozenset[str]:
    """The capabilities nemesis ``name`` needs, in a run with ``roles``. A nemesis acting on a
    role ``roles`` lacks needs nothing here (it is given a role without nodes): whether the
    run has its roles at all is :func:`lacking`'s to say."""
    return NEMESES[name](PlanInfo(roles=roles)).requires


def marks(roles: Mapping[str, Role]) -> Mapping[str, Mark]:
    """How the timeline draws every action of every nemesis in a run with ``roles`` (action
    names are unique; a loaded history's ops carry the current names)."""
    out: dict[str, Mark] = {}
    for factory in NEMESES.values():
        out.update(factory(PlanInfo(roles=roles)).marks)
    return out
