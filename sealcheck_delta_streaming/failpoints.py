"""The job's failpoints: places where the harness can crash, fail or stall one incarnation.

The harness arms a point by writing ``name=action@hit`` (action ``crash``, ``error`` or
``sleep(ms)``) into the file named by ``SEALCHECK_FAILPOINTS_FILE``; the job re-reads the file
whenever it changes. When a point fires the job prints a JSON ``failpoint`` event and removes
the file (consumed: the next incarnation starts disarmed); ``crash`` is SIGKILL of the driver
process, so nothing is flushed and Spark's JVM dies with it (it exits when its Python parent
does). The points are armed and fired by :mod:`sealcheck_failpoint`, the dependency-free helper
any job may ship (it imports nothing of Sealcheck); this module lists where the job's points
sit.
"""

from __future__ import annotations

from sealcheck_failpoint import ENV_VAR as FILE_ENV_VAR
from sealcheck_failpoint import FailpointError, Failpoints

#: Every failpoint of the job, with where it sits. Keep in step with docs/systems.md.
FAILPOINTS: dict[str, str] = {
    "start.before_query": "start-up: Spark session up and tables created, the streaming query "
    "not yet started (it will resume from the checkpoint)",
    "batch.before_merge": "foreachBatch: winners of the micro-batch computed, no Delta commit yet",
    "batch.between_commits": "foreachBatch: the data table's MERGE committed, the errors "
    "table's not yet",
    "batch.after_commits": "foreachBatch: both Delta commits done, foreachBatch not returned "
    "(Spark's commits/N not yet written: the batch will be replayed)",
}

__all__ = ["FAILPOINTS", "FILE_ENV_VAR", "FailpointError", "Failpoints"]
