"""Our pipeline (``pipeline/``, the persistent Kafka upsert source on Spark) as a system under
test: the first :class:`sealcheck.systems.api.SystemUnderTest`.

* Store: a SQLite file under the run's ``work/`` locally — on a lazy FUSE mount
  (:mod:`sealcheck.infra.lazy_disk`) when a nemesis needs to lose un-fsynced writes; a fresh
  PostgreSQL
  database on the containers backend (reached by name from inside the network, by IP from
  the host).
* Incarnation: ``python -m sealcheck_upsert_source`` locally (the connector jars named by
  ``SEALCHECK_SPARK_JARS``), the ``sealcheck-upsert-source`` image in containers.
* Failpoints: :data:`sealcheck_upsert_source.failpoints.FAILPOINTS`, armed through the failpoint
file; a
  firing is a JSON ``failpoint`` event in the incarnation's log.
* Progress and export: straight from the store's tables
(:mod:`sealcheck.systems.upsert_source.store`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from sealcheck.core.nodes import Disk, Launch, Node
from sealcheck.infra.lazy_disk import LazyDisk
from sealcheck.infra.node import Backend
from sealcheck.rundir.captures import Capture
from sealcheck.systems.api import Progress, Settings, SystemUnderTest
from sealcheck.systems.spark_cluster import SparkCluster
from sealcheck.systems.upsert_source import store
from sealcheck.systems.upsert_source.image import upsert_source_image
from sealcheck.systems.upsert_source.spark_server import SparkServer
from sealcheck_upsert_source.broken import BROKEN_MODES
from sealcheck_upsert_source.failpoints import FAILPOINTS


@dataclass(frozen=True)
class UpsertSource(SystemUnderTest):
    """The descriptor of our pipeline (the harness's defaults were chosen for it). Its options
    (``--set system_options.retain_steps=0``): compaction every ``compact_every`` steps (so
    its failpoints are reached within a 3 s fault window), keeping ``retain_steps`` steps, and
    up to ``hold_steps`` more until the observer has captured them — steps below the store's
    ``since`` survive only merged, so they cannot be judged one by one."""

    retain_steps: int = 2
    compact_every: int = 2
    hold_steps: int = 20

    name = "upsert-source"
    failpoints = MappingProxyType(FAILPOINTS)
    startup_failpoints = frozenset({"rehydrate.mid"})
    #: compaction starts once ``retain_steps`` steps are sealed and the observer holds (or
    #: ``hold_steps`` are sealed)
    late_failpoints = frozenset({"compact.mid", "compact.between", "compact.after_commit"})
    commit_failpoints = ("bindings.after_append", "data.after_commit")
    refusal_exit_codes = frozenset({4})  # sealcheck_upsert_source.cli.EXIT_STORE
    stall_failpoint = "data.before_append"  # range read and diffed, data not yet appended
    #: the SQLite store's write-ahead log: the ``boundary`` nemesis crashes a restarted
    #: incarnation just after its 1st, 2nd, 3rd commit (a step's bindings, its data and
    #: errors, a compaction — in whichever order a restart makes them)
    commit_files = r"^/store\.db-wal$"
    broken_modes = MappingProxyType(BROKEN_MODES)

    def __post_init__(self) -> None:
        for name, least, what in (("retain_steps", 0, "0 (never compact) or more"),
                                  ("hold_steps", 0, "0 (no read hold) or more"),
                                  ("compact_every", 1, "at least 1")):  # fmt: skip
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < least:
                raise ValueError(f"{name}={value!r}: {what}")

    def offers(self, backend: str) -> frozenset[str]:
        """Failpoints everywhere; a lazy disk under the SQLite store of the local backend (and
        with it commit boundaries: its commits after a restart); its
        store in the database server of the containers backend (so the run has the
        ``database`` role); a Spark standalone cluster on both (used with ``--spark
        cluster``)."""
        here = {"failpoints", "spark-cluster"}
        local = {"lazy-disk", "power-cut", "commit-boundaries"}
        store = local if backend == "local" else {"database"}
        return frozenset(here | store)

    def deploy(
        self, backend: Backend, settings: Settings, work: Path, logs: Path
    ) -> PipelineDeployment:
        """A SQLite store in ``work`` locally, a new PostgreSQL database where the backend
        has one; a Spark Connect server unless ``settings.spark`` is ``local``."""
        return PipelineDeployment(backend, settings, work, logs, self)

    def images(self) -> Sequence[Callable[[], str]]:
        """The pipeline image."""
        from sealcheck.systems.upsert_source.image import upsert_source_image

        return [upsert_source_image]


class PipelineDeployment:
    """The pipeline on one backend for one run (:class:`sealcheck.systems.api.Deployment`)."""

    def __init__(
        self,
        backend: Backend,
        settings: Settings,
        work: Path,
        logs: Path,
        system: UpsertSource | None = None,
    ) -> None:
        self.backend, self.settings = backend, settings
        #: its options (compaction)
        self.system = system or UpsertSource()
        #: where a local incarnation starts: its own Spark driver (``--spark local``) makes
        #: ``artifacts/`` there, not in the user's directory. Absolute, as the store's path
        #: given to it (the backend makes the failpoint file's absolute too)
        self.work = work = work.absolute()
        self.cluster = (
            SparkCluster(backend, logs, image=upsert_source_image)
            if settings.spark == "cluster"
            else None
        )
        master = self.cluster.url if self.cluster is not None else None
        workers = len(self.cluster.workers) if self.cluster is not None else 2
        self.spark = (
            SparkServer(backend, logs, master=master, executors=workers)
            if settings.spark in ("connect", "cluster")
            else None
        )
        db = backend.database()
        self.disk: LazyDisk | None = None
        if db is None and settings.lazy_store:
            # the store's directory is a lazy mount over work/store-durable
            mount = work / "store"
            self.disk = LazyDisk(work / "store-durable", mount, logs / "lazyfs.log")
            self._store = self._inside = str(mount / "store.db")
        elif db is None:
            self._store = self._inside = str(work / "store.db")
        else:
            name = db.new_database("store")
            self._db, self._name = db, name
            self._inside = db.dsn(name, inside=True)
            self._store = ""

    @property
    def store(self) -> str:
        """The store as the host reaches it (a PostgreSQL server's IP may change)."""
        return self._store or self._db.dsn(self._name)

    def start(self) -> None:
        """Mount the lazy disk (if asked for) and start the Spark Connect server (in
        ``connect`` mode)."""
        if self.disk is not None:
            self.disk.start()
        if self.cluster is not None:
            self.cluster.start()
        if self.spark is not None:
            self.spark.ensure()

    def stop(self) -> None:
        """Stop the Spark Connect server and the cluster; unmount the lazy disk."""
        try:
            if self.spark is not None:
                self.spark.stop()
        finally:
            try:
                if self.cluster is not None:
                    self.cluster.stop()
            finally:
                if self.disk is not None:
                    self.disk.stop()

    def nodes(self, role: str) -> Sequence[Node]:
        """The Spark cluster's ``spark-worker`` and ``spark-executor`` nodes (``--spark
        cluster``); nothing otherwise."""
        return self.cluster.nodes(role) if self.cluster is not None else []

    def disks(self) -> Mapping[str, Disk]:
        """``store`` when the store is on a lazy disk."""
        return {"store": self.disk} if self.disk is not None else {}

    def launch(self, incarnation: int) -> Launch:
        """``python -m sealcheck_upsert_source`` (locally) or the pipeline image, with the run's
        settings; the Spark Connect server is started again first if it died."""
        from sealcheck.infra.jars import spark_connector_jars
        from sealcheck.systems.upsert_source.image import upsert_source_image

        s = self.settings
        args = [
            "--bootstrap",
            self.backend.bootstrap,
            "--topic",
            s.topic,
            "--store",
            self._inside,
            "--max-records-per-step",
            str(s.max_records_per_step),
            "--retain-steps",
            str(self.system.retain_steps),
            "--compact-every",
            str(self.system.compact_every),
            "--hold-steps",
            str(self.system.hold_steps),
        ]
        if s.broken:
            args += ["--broken", s.broken]
        if self.spark is not None:
            self.spark.ensure()
            args += ["--spark-remote", self.spark.url]
        jars = ":".join(str(p) for p in spark_connector_jars())  # the image carries its own
        return Launch(
            program=(sys.executable, "-m", "sealcheck_upsert_source"),
            args=tuple(args),
            env={"PYTHONUNBUFFERED": "1"},
            local_env={"SEALCHECK_SPARK_JARS": jars},
            image=upsert_source_image,
            workdir=str(self.work),
        )

    def uppers(self) -> dict[str, int] | None:
        """The store's uppers (None while it does not exist or cannot be reached)."""
        return store.read_uppers(self.store)

    def progress(self) -> Progress | None:
        """Uppers and the last sealed bindings."""
        return store.read_progress(self.store)

    def capture(self, since_captured: dict[str, int]) -> Capture | None:
        """Sealed steps not captured yet, read from the store's tables before compaction
        merges them (:class:`sealcheck.systems.api.CapturesSteps`), holding compaction back
        where the store is not on a lazy disk: there a write of the harness's, fsynced, would
        make the pipeline's un-fsynced pages durable too (and count among its fsyncs), so the
        store keeps ``hold_steps`` steps instead (:func:`store.hold_captured`)."""
        return store.read_capture(self.store, since_captured, hold=self.disk is None)

    def export(self, run_dir: Path) -> None:
        """The store's tables into the checkers' format (plus the SQLite file itself)."""
        store.export(self.store, run_dir)
