"""A Spark Structured Streaming job writing Delta Lake (the package
``sealcheck_delta_streaming``) as a system under test: ``--system delta-streaming``.

* Store: a directory under the run's ``work/`` holding the query's checkpoint and the two Delta
  tables; incarnations and the harness share it (capability ``host-directory``: locally the
  same directory, in containers bind-mounted at the same path).
* Incarnation: ``python -m sealcheck_delta_streaming`` with its own Spark driver, as the job
  runs in production (a driver outside the incarnation would outlive a kill, and a killed
  driver is the fault that matters), Spark's Kafka connector and Delta on its classpath; in
  containers the ``sealcheck-delta-streaming`` image
  (:mod:`sealcheck.systems.delta_streaming.image`).
  The driver runs in local mode, or with ``--spark cluster`` submits to the run's Spark
  standalone cluster (:mod:`sealcheck.systems.spark_cluster`: workers of the job's image, the
  job's directory mounted at the same path, since executors write the tables' files);
  ``connect`` and ``local`` both mean local mode.
* Failpoints: :data:`sealcheck_delta_streaming.failpoints.FAILPOINTS`, armed through the
  failpoint file.
* Variants: :data:`sealcheck_delta_streaming.variants.VARIANTS` (``--broken NAME``).
* Progress and export: :class:`sealcheck.systems.outputs.DeltaOutput` — the checkpoint and
  the Delta logs read as files, the change data feed through delta-rs, never through Spark.

``--system delta-streaming-tables`` (:class:`DeltaTables`) is the same job seen as a user's
job is: judged from its Delta tables alone (no checkpoint read, no bindings: the ``prefix``
checker) and crashed only from outside (crash windows, kills, pauses; no failpoint armed).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

from sealcheck.core.nodes import Disk, Launch, Node
from sealcheck.core.windows import streaming_windows
from sealcheck.infra.node import Backend
from sealcheck.systems.api import Progress, Settings, SystemUnderTest
from sealcheck.systems.job import settling
from sealcheck.systems.outputs import DeltaOutput
from sealcheck.systems.spark_cluster import SparkCluster
from sealcheck_delta_streaming.failpoints import FAILPOINTS
from sealcheck_delta_streaming.variants import VARIANTS

#: The job's name for its transactions (Delta's ``txnAppId``).
APP_ID = "sealcheck-delta-streaming"


class DeltaStreaming(SystemUnderTest):
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
    requires = frozenset({"host-directory"})
    #: A killed driver is back after a JVM start, Spark, Delta and a first MERGE (~40 s on
    #: 2 cores with a backlog, against ~2.7 s for the pipeline: bench/sut_compare.py), and a
    #: MERGE costs seconds whatever its size: faults 45 s apart (a window outlasts a
    #: recovery, so the next fault hits a working job), batches of up to 20,000 records,
    #: more time to catch up.
    run_defaults: Mapping[str, Any] = MappingProxyType(
        {
            "nemesis_interval_s": 45.0,
            "duration_s": 180.0,
            "max_records_per_step": 20_000,
            "final_timeout_s": 300.0,
        }
    )

    def offers(self, backend: str) -> frozenset[str]:
        """Failpoints, crash windows and a Spark standalone cluster (on every backend that can
        run it); no ``database``: the job keeps its state in files, so a run of it has no
        database role (``kill-postgres``, ``lose-commit-reply`` are refused)."""
        return frozenset({"failpoints", "spark-cluster", "crash-windows", "commit-boundaries"})

    def deploy(self, backend: Backend, settings: Settings, work: Path, logs: Path) -> JobDeployment:
        """The job's directory under ``work`` (and the cluster, with ``--spark cluster``)."""
        return JobDeployment(backend, settings, work, logs, tables_alone=False)

    def images(self) -> Sequence[Callable[[], str]]:
        """The job's image (on top of the pipeline's)."""
        from sealcheck.systems.delta_streaming.image import delta_streaming_image

        return [delta_streaming_image]


class DeltaTables(DeltaStreaming):
    """The job judged from its Delta tables alone and crashed only from outside: what
    Sealcheck can do with a user's Delta job that it knows nothing of (no failpoint, no
    checkpoint read, no bindings)."""

    name = "delta-streaming-tables"
    failpoints: Mapping[str, str] = MappingProxyType({})
    startup_failpoints: frozenset[str] = frozenset()
    commit_failpoints: tuple[str, ...] = ()
    stall_failpoint = None

    def offers(self, backend: str) -> frozenset[str]:
        """Crash windows and a Spark standalone cluster; no failpoints."""
        return frozenset({"spark-cluster", "crash-windows", "commit-boundaries"})

    def deploy(self, backend: Backend, settings: Settings, work: Path, logs: Path) -> JobDeployment:
        """The job's directory, its output seen as the tables alone."""
        return JobDeployment(backend, settings, work, logs, tables_alone=True)


def output(
    root: Path, topic: str, variant: str | None = None, tables_alone: bool = False
) -> DeltaOutput:
    """The job's output in its directory ``root``: ``checkpoint/``, the tables ``data/`` and
    ``errors/`` (columns ``key``, ``value``: the value as it is), and, where the variant runs
    a dead-letter query of its own, that query's ``checkpoint-errors/``; with
    ``tables_alone``, the tables without the checkpoints."""
    own = variant == "unrelated-errors-query" and not tables_alone
    return DeltaOutput(
        checkpoint=None if tables_alone else root / "checkpoint",
        data=root / "data",
        key="key",
        errors=root / "errors",
        value="value",
        errors_checkpoint=root / "checkpoint-errors" if own else None,
        topic=topic,
    )


class JobDeployment:
    """The job on one backend for one run (:class:`sealcheck.systems.api.Deployment`)."""

    def __init__(
        self, backend: Backend, settings: Settings, work: Path, logs: Path, tables_alone: bool
    ) -> None:
        from sealcheck.systems.delta_streaming.image import delta_streaming_image

        self.backend, self.settings = backend, settings
        self.root = (work / "delta-job").resolve()  # a bind mount needs an absolute path
        self.out = output(self.root, settings.topic, settings.broken, tables_alone)
        self.cluster = (
            SparkCluster(backend, logs, shared=(str(self.root),), image=delta_streaming_image)
            if settings.spark == "cluster"
            else None
        )

    @property
    def store(self) -> str:
        """The job's directory (checkpoint and tables)."""
        return str(self.root)

    def start(self) -> None:
        """The job's directory; the cluster (``--spark cluster``)."""
        self.root.mkdir(parents=True, exist_ok=True)
        if self.cluster is not None:
            self.cluster.start()

    def stop(self) -> None:
        """Stop the cluster (``--spark cluster``)."""
        if self.cluster is not None:
            self.cluster.stop()

    def disks(self) -> Mapping[str, Disk]:
        """None: the job keeps no store on a lazy disk."""
        return {}

    def nodes(self, role: str) -> Sequence[Node]:
        """The Spark cluster's ``spark-worker`` and ``spark-executor`` nodes (``--spark
        cluster``); nothing otherwise (the driver runs inside each incarnation)."""
        return self.cluster.nodes(role) if self.cluster is not None else []

    def launch(self, incarnation: int) -> Launch:
        """``python -m sealcheck_delta_streaming`` with the run's settings."""
        from sealcheck.infra.jars import delta_jars, spark_connector_jars
        from sealcheck.systems.delta_streaming.image import delta_streaming_image

        s = self.settings
        args = [
            "--bootstrap",
            self.backend.bootstrap,
            "--topic",
            s.topic,
            "--dir",
            str(self.root),
            "--max-offsets-per-trigger",
            str(s.max_records_per_step),
            "--app-id",
            APP_ID,
        ]
        if s.broken:
            args += ["--variant", s.broken]
        if self.cluster is not None:
            args += ["--master", self.cluster.url]
        jars = ":".join(str(p) for p in [*spark_connector_jars(), *delta_jars()])
        return Launch(
            program=(sys.executable, "-m", "sealcheck_delta_streaming"),
            args=tuple(args),
            env={"PYTHONUNBUFFERED": "1"},
            local_env={"SEALCHECK_SPARK_JARS": jars, "SPARK_LOCAL_IP": "127.0.0.1"},
            image=delta_streaming_image,
            shared=(str(self.root),),
            workdir=str(self.root),  # its driver's artifacts/ stays in the run, as a job's does
        )

    def uppers(self) -> dict[str, int] | None:
        """The checkpoint's and the tables' uppers (None before the job wrote anything)."""
        return self.out.uppers()

    def progress(self) -> Progress | None:
        """Uppers and the end offsets of the last batch both tables committed; for the tables
        alone, when the tables or the job's directory last changed
        (:func:`sealcheck.systems.job.settling`)."""
        return settling(self.out.progress(), self.root, DeltaStreaming.windows.values())

    def export(self, run_dir: Path) -> None:
        """The tables' change feeds and the offset log into the checkers' format
        (:class:`sealcheck.systems.outputs.DeltaOutput`)."""
        self.out.export(run_dir)
