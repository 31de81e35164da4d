"""The registry of nemeses: adding one is one module plus one line in :data:`NEMESES`."""

from __future__ import annotations

from collections.abc import Callable

from nemeses.api import Nemesis, PlanInfo
from nemeses.failpoint import Failpoint
from nemeses.kill import Kill
from nemeses.kill_kafka import KillKafka
from nemeses.kill_postgres import KillPostgres
from nemeses.partition import Partition
from nemeses.pause import Pause
from nemeses.pause_kafka import PauseKafka

NEMESES: dict[str, Callable[[PlanInfo], Nemesis]] = {
    "kill": lambda info: Kill(),
    "failpoint": Failpoint,
    "pause": lambda info: Pause(),
    "kill-kafka": KillKafka,
    "pause-kafka": PauseKafka,
    "partition": Partition,
    "kill-postgres": lambda info: KillPostgres(),
}

#: Nemeses that need the containers backend (their faults need containers to act on).
CONTAINERS_ONLY = frozenset({"partition", "kill-postgres"})


def build(names: tuple[str, ...] | list[str], info: PlanInfo) -> dict[str, Nemesis]:
    """One instance per named nemesis; an unknown name is a ValueError naming the known ones."""
    unknown = [n for n in names if n not in NEMESES]
    if unknown:
        raise ValueError(f"unknown nemesis {unknown}; known: {', '.join(NEMESES)}")
    return {n: NEMESES[n](info) for n in names}
