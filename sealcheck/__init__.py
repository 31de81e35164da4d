"""Sealcheck: runs one test — real Kafka, the system under test under a supervisor,
a seeded workload, a planned fault schedule — and judges and stores it.

The public API is deliberately small; everything not re-exported here is internal:

* :class:`TestConfig`, :class:`WorkloadConfig`, :func:`load_config`, :class:`ConfigError`:
  the serialisable spec of a test;
* :class:`Test`, :func:`build_test`: a spec built into one value (system under test, backend,
  nemeses with their schedule, seeds, checkers), whose parts can be swapped in Python;
* :func:`run_test`, :class:`Outcome`: run it (``sealcheck run`` does exactly this);
* :class:`Job`, :class:`JobRun`, :class:`DeltaOutput`, :class:`SQLiteOutput`,
  :class:`PostgresOutput`, :class:`TopicOutput`: your own job as a system under test
  (``docs/your-own-job.md``), :class:`Output` the base of every output (a new kind of
  output is one subclass defining ``uppers``, ``progress``, ``export``) and :class:`Progress`
  what its ``progress()`` gives,
  :class:`SystemUnderTest` the base class of every descriptor, :class:`Unjudgeable` what an
  output raises when it holds what cannot be judged (the run halts);
* :class:`Record`, :class:`Upsert`, :class:`Delete`, :func:`DeadLetter`, :data:`SKIP`: what one
  input record should do to the job's output (:mod:`sealcheck.core.effects`);
* :class:`Draw`, :class:`NewRecord`: your own records — what Sealcheck drew for one record
  (key, kind, writer, a seeded random source) and the record a descriptor's ``record(draw)``
  produces for it (:mod:`sealcheck.core.records`);
* :class:`CrashWindow`, :func:`streaming_windows`: a job's crash windows told from outside
  (files it writes, lines it logs), where the ``window`` nemesis kills it — no failpoint;
* :func:`spark_kafka_jars`, :func:`delta_jars`, :func:`spark_avro_jars`: the jars a Spark job
  needs for Kafka, Delta and ``from_avro`` (copied from Maven Central by ``sealcheck setup``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sealcheck.core.effects import SKIP, DeadLetter, Delete, Record, Upsert
    from sealcheck.core.records import Draw, NewRecord
    from sealcheck.core.windows import CrashWindow, streaming_windows
    from sealcheck.harness.run.config import ConfigError, TestConfig, WorkloadConfig, load_config
    from sealcheck.harness.run.runner import Outcome, run_test
    from sealcheck.harness.run.test import Test, build_test
    from sealcheck.infra.jars import delta_jars, spark_avro_jars
    from sealcheck.infra.jars import spark_connector_jars as spark_kafka_jars
    from sealcheck.systems.api import Progress, SystemUnderTest, Unjudgeable
    from sealcheck.systems.job import Job, JobRun
    from sealcheck.systems.outputs import (
        DeltaOutput,
        Output,
        PostgresOutput,
        SQLiteOutput,
        TopicOutput,
    )

#: Where each public name lives. Imported on first use, so that ``import sealcheck.infra.keeper``
#: (a process the harness starts) does not load the whole engine.
_HOMES = {
    "DeadLetter": "sealcheck.core.effects",
    "Delete": "sealcheck.core.effects",
    "Record": "sealcheck.core.effects",
    "SKIP": "sealcheck.core.effects",
    "Upsert": "sealcheck.core.effects",
    "Draw": "sealcheck.core.records",
    "NewRecord": "sealcheck.core.records",
    "CrashWindow": "sealcheck.core.windows",
    "streaming_windows": "sealcheck.core.windows",
    "DeltaOutput": "sealcheck.systems.outputs",
    "SQLiteOutput": "sealcheck.systems.outputs",
    "PostgresOutput": "sealcheck.systems.outputs",
    "TopicOutput": "sealcheck.systems.outputs",
    "Output": "sealcheck.systems.outputs",
    "Progress": "sealcheck.systems.api",
    "Job": "sealcheck.systems.job",
    "JobRun": "sealcheck.systems.job",
    "SystemUnderTest": "sealcheck.systems.api",
    "Unjudgeable": "sealcheck.systems.api",
    "delta_jars": "sealcheck.infra.jars",
    "spark_avro_jars": "sealcheck.infra.jars",
    "spark_kafka_jars": "sealcheck.infra.jars:spark_connector_jars",
    "ConfigError": "sealcheck.harness.run.config",
    "TestConfig": "sealcheck.harness.run.config",
    "WorkloadConfig": "sealcheck.harness.run.config",
    "load_config": "sealcheck.harness.run.config",
    "Outcome": "sealcheck.harness.run.runner",
    "run_test": "sealcheck.harness.run.runner",
    "Test": "sealcheck.harness.run.test",
    "build_test": "sealcheck.harness.run.test",
}


def __getattr__(name: str) -> Any:
    """Import a public name from its home on first use (PEP 562)."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'sealcheck' has no attribute {name!r}")
    module, _, attr = home.partition(":")
    return getattr(importlib.import_module(module), attr or name)


def __dir__() -> list[str]:
    """The public names too (imported on first use, so not yet in the module's namespace):
    ``dir(sealcheck)`` and an editor's completion show them."""
    return sorted({*globals(), *__all__})


__all__ = [
    "SKIP",
    "ConfigError",
    "CrashWindow",
    "DeadLetter",
    "Delete",
    "DeltaOutput",
    "Draw",
    "Job",
    "JobRun",
    "NewRecord",
    "Outcome",
    "Output",
    "PostgresOutput",
    "Progress",
    "Record",
    "SQLiteOutput",
    "SystemUnderTest",
    "Test",
    "TestConfig",
    "TopicOutput",
    "Unjudgeable",
    "Upsert",
    "WorkloadConfig",
    "build_test",
    "delta_jars",
    "load_config",
    "run_test",
    "spark_avro_jars",
    "spark_kafka_jars",
    "streaming_windows",
]
