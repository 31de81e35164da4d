"""A Spark Structured Streaming job writing Delta Lake (the package
``sealcheck_delta_streaming``) as a system under test, ``--system delta-streaming``: a
:class:`~sealcheck.systems.job.Job` like a user's, deployed by the same
:class:`~sealcheck.systems.job.JobDeployment` (its directory, lazy disk, Spark cluster,
containers), with failpoints (:data:`sealcheck_delta_streaming.failpoints.FAILPOINTS`, armed
through the failpoint file), variants (:data:`sealcheck_delta_streaming.variants.VARIANTS`) and,
in containers, the ``sealcheck-delta-streaming`` image
(:mod:`sealcheck.systems.delta_streaming.image`). Its output is a
:class:`~sealcheck.systems.outputs.DeltaOutput`: the checkpoint and the Delta logs read as
files, the change data feed through delta-rs, never through Spark.

``--system delta-streaming-tables`` (:class:`DeltaTables`) is the same job seen as a user's
job is: judged from its Delta tables alone (no checkpoint read, no bindings: the ``prefix``
checker) and crashed only from outside (crash windows, kills, pauses; no failpoint armed).
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from sealcheck.core.windows import streaming_windows
from sealcheck.systems.job import Job, JobRun
from sealcheck.systems.outputs import DeltaOutput
from sealcheck_delta_streaming.failpoints import FAILPOINTS
from sealcheck_delta_streaming.variants import VARIANTS


class DeltaStreaming(Job):
    """The descriptor of the Structured Streaming + Delta job."""

    name = "delta-streaming"
    failpoints: Mapping[str, str] = FAILPOINTS
    startup_failpoints = frozenset({"start.before_query"})
    #: right after the data table's commit returned (``error`` there: a commit that happened
    #: but whose batch fails, so Spark runs it again)
    commit_failpoints: tuple[str, ...] = ("batch.between_commits",)
    stall_failpoint: str | None = "batch.before_merge"
    #: the same batch windows told from outside (the ``window`` nemesis: no failpoint)
    windows = streaming_windows("checkpoint", ("data", "errors"))
    broken_modes: Mapping[str, str] = MappingProxyType({n: v[0] for n, v in VARIANTS.items()})
    #: a replayed MERGE of the same winners changes no row (docs/systems.md)
    harmless_modes = frozenset({"no-idempotent-writes"})
    #: its directory on a lazy disk only for nemeses named (``--nemesis boundary``): the
    #: default mix stays the one its detection was measured with (docs/systems.md)
    opt_in = frozenset({"power-cut", "lazy-disk"})
    #: a job's defaults (:attr:`Job.run_defaults`: big batches, time to catch up) but the
    #: harness's own mix of faults, 45 s apart (a window outlasts a recovery of ~40 s,
    #: bench/sut_compare.py, so the next fault hits a working job), in a longer run
    run_defaults: Mapping[str, Any] = MappingProxyType(
        {k: v for k, v in Job.run_defaults.items() if k != "nemeses"}
        | {"nemesis_interval_s": 45.0, "duration_s": 180.0}
    )

    def command(self, run: JobRun) -> list[str]:
        """``python -m sealcheck_delta_streaming`` with the run's settings."""
        from sealcheck.infra.jars import delta_jars, spark_connector_jars

        jars = ":".join(str(p) for p in [*spark_connector_jars(), *delta_jars()])
        argv = [sys.executable, "-m", "sealcheck_delta_streaming", "--bootstrap", run.bootstrap]
        argv += ["--topic", run.topic, "--dir", str(run.dir), "--jars", jars]
        argv += ["--max-offsets-per-trigger", str(run.max_records_per_step)]
        argv += ["--app-id", "sealcheck-delta-streaming"]  # Delta's txnAppId
        argv += ["--variant", run.broken] if run.broken else []
        return argv + (["--master", run.master] if run.master else [])

    def environment(self, run: JobRun) -> Mapping[str, str]:
        """Locally, the driver's address for a cluster's executors to call back on."""
        return {"SPARK_LOCAL_IP": "127.0.0.1"} if run.backend == "local" else {}

    def output(self, run: JobRun) -> DeltaOutput:
        """``checkpoint/``, the tables ``data/`` and ``errors/`` (columns ``key``, ``value``:
        the value as it is) and, where the variant runs a dead-letter query of its own, that
        query's ``checkpoint-errors/``."""
        own = run.broken == "unrelated-errors-query"
        return DeltaOutput(
            checkpoint=run.dir / "checkpoint",
            data=run.dir / "data",
            key="key",
            errors=run.dir / "errors",
            value="value",
            errors_checkpoint=run.dir / "checkpoint-errors" if own else None,
            topic=run.topic,
        )

    def container_image(self) -> str:
        """``sealcheck-delta-streaming:<hash>`` (:mod:`sealcheck.systems.delta_streaming.image`)."""
        from sealcheck.systems.delta_streaming.image import delta_streaming_image

        return delta_streaming_image()


class DeltaTables(DeltaStreaming):
    """The job judged from its Delta tables alone and crashed only from outside: what
    Sealcheck can do with a user's Delta job that it knows nothing of (no failpoint, no
    checkpoint read, no bindings)."""

    name = "delta-streaming-tables"
    failpoints: Mapping[str, str] = MappingProxyType({})
    startup_failpoints: frozenset[str] = frozenset()
    commit_failpoints: tuple[str, ...] = ()
    stall_failpoint = None

    def output(self, run: JobRun) -> DeltaOutput:
        """The tables without the checkpoints."""
        return dataclasses.replace(super().output(run), checkpoint=None, errors_checkpoint=None)
