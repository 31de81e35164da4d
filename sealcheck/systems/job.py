"""A user's job as a system under test, stated in a few lines: how to start it and where its
output is (and, if it has them, its failpoints and its own mapping of records to effects).

::

    @dataclass(frozen=True)
    class MyJob(Job):
        name = "my-job"

        def command(self, run: JobRun) -> list[str]:
            return [sys.executable, "-m", "my_job", "--bootstrap", run.bootstrap,
                    "--topic", run.topic, "--dir", str(run.dir)]

        def output(self, run: JobRun) -> DeltaOutput:
            return DeltaOutput(run.dir / "checkpoint", run.dir / "table", key="id")

The harness gives every run a directory of the job's own (:attr:`JobRun.dir`, read and written
by the job and read by the harness), starts the command for each incarnation as a process of
the host — or, with ``--backend containers``, as a container of the job's image
(:attr:`Job.image`, or one built from its installed project: :mod:`sealcheck.systems.job_image`)
with that directory at the same path — (its output to the incarnation's log; SIGKILL,
SIGSTOP, the failpoint file), reads
how far the job has sealed from :meth:`Job.output` four times a second, and exports it at the
end. The job itself imports nothing of Sealcheck (failpoints, if wanted, through the
dependency-free :mod:`sealcheck_failpoint`).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from sealcheck.core.effects import EffectMapping, Effects, Record
from sealcheck.core.nodes import Disk, Launch, Node
from sealcheck.core.version_effects import VersionEffects
from sealcheck.infra.jars import jars_dir
from sealcheck.infra.lazy_disk import LazyDisk
from sealcheck.infra.node import Backend
from sealcheck.rundir.captures import Capture
from sealcheck.systems.api import Progress, Settings, SystemUnderTest
from sealcheck.systems.job_calls import (
    DescriptorError,
    call_command,
    call_environment,
    call_output,
)
from sealcheck.systems.job_checkpoint import (
    batch_boundary,
    paired,
    proven,
    settling,
    watch_checkpoint,
)
from sealcheck.systems.job_image import in_image
from sealcheck.systems.outputs import Output
from sealcheck.systems.spark_cluster import SparkCluster

#: Kafka's bootstrap servers in :meth:`JobRun.placeholder` (nothing listens there)
PLACEHOLDER_BOOTSTRAP = "127.0.0.1:9092"


@dataclass(frozen=True)
class JobRun:
    """What a run tells a job's descriptor."""

    #: Kafka's bootstrap servers
    bootstrap: str
    #: the topic the workload writes
    topic: str
    #: the job's own directory for this run: its checkpoint and tables go here
    dir: Path
    #: the most records one micro-batch should read (``maxOffsetsPerTrigger``)
    max_records_per_step: int
    #: the broken mode asked for (``--broken``, one of the descriptor's ``broken_modes``)
    broken: str | None = None
    #: ``spark://host:port`` of the run's Spark standalone cluster (``--spark cluster``);
    #: None: the job runs its own driver in local mode
    master: str | None = None
    #: where its incarnations run: ``local`` (processes of the host) or ``containers`` (its
    #: image on the run's network, :attr:`dir` and Sealcheck's jar cache at their host paths)
    backend: str = "local"
    #: the version this incarnation runs, one of :attr:`Job.versions` (the first, until the
    #: ``upgrade`` nemesis switches to the next); "" for a job that declares none
    version: str = ""

    @classmethod
    def placeholder(
        cls,
        topic: str,
        directory: Path,
        max_records_per_step: int,
        broken: str | None,
        backend: str = "local",
    ) -> JobRun:
        """What a descriptor is called with before the run starts, when it is checked
        (:func:`check_job`): the run's topic, batch size, broken mode and backend, but Kafka's
        bootstrap :data:`PLACEHOLDER_BOOTSTRAP` (no broker runs yet), a ``directory`` that does
        not exist yet, and no Spark master."""
        return cls(
            PLACEHOLDER_BOOTSTRAP, topic, directory, max_records_per_step, broken, None, backend
        )

    def of_version(self, version: str) -> JobRun:
        """This run as version ``version`` sees it."""
        return replace(self, version=version)


class Job(SystemUnderTest):
    """A job started from a command, its output read from outside: subclass it and define
    :meth:`command` and :meth:`output` (and :meth:`effect`, when the job writes rows of its
    own shape rather than the record's value). The harness calls them before anything starts,
    with :meth:`JobRun.placeholder` values (:func:`check_job`), so they must not need Kafka or
    the job's directory to exist yet."""

    #: the job's directory is shared with the harness (locally, or bind-mounted into the
    #: containers of its image)
    requires = frozenset({"host-directory"})
    #: the container image its incarnations run in under ``--backend containers``: a tag built
    #: beforehand (``"my-job:1"``, with ``python`` and PySpark on its ``PATH``); empty:
    #: Sealcheck builds one from the project the descriptor is installed from
    #: (:mod:`sealcheck.systems.job_image`)
    image: str = ""
    #: its directory goes on a lazy disk for the ``boundary`` nemesis of the default mix, but
    #: a power cut (``lost-writes``) only when named: Spark and Delta never fsync, so a power
    #: cut in every default run would judge the job's durability under power loss rather
    #: than its logic
    opt_in = frozenset({"power-cut"})
    #: A job with its own Spark driver is back from a crash after a JVM, Spark and its sink
    #: start (tens of seconds on 2 cores), and a MERGE costs about the same whatever its size:
    #: faults 20 s apart, big batches, time to catch up. A descriptor's own run_defaults
    #: replace these; flags and config files override both.
    run_defaults: Mapping[str, Any] = MappingProxyType(
        {
            "nemesis_interval_s": 20.0,
            # six windows of 20 s in a 140 s run, shuffled (:mod:`sealcheck.nemeses.schedule`):
            # its commit boundaries (when it declares windows: ``boundary``) in four, the four
            # of a checkpoint that catch a job's own mistakes (closing, closed, committed,
            # full), a random kill and a pause; its failpoints when it declares some (then one
            # of the seven is left out); each left out when the job cannot host it
            "nemeses": (
                "boundary",
                "kill",
                "boundary",
                "boundary",
                "boundary",
                "pause",
                "failpoint",
            ),
            "duration_s": 140.0,
            "max_records_per_step": 20_000,
            "final_timeout_s": 300.0,
        }
    )

    def command(self, run: JobRun) -> Sequence[str]:
        """The command that starts one incarnation (program and arguments)."""
        raise NotImplementedError(f"{type(self).__name__} does not say how to start the job")

    def output(self, run: JobRun) -> Output:
        """Where the job's output is (e.g. :class:`sealcheck.systems.outputs.DeltaOutput`)."""
        raise NotImplementedError(f"{type(self).__name__} does not say where its output is")

    def environment(self, run: JobRun) -> Mapping[str, str]:
        """Variables added to an incarnation's environment (none by default)."""
        return {}

    def effect(self, record: Record) -> Effects:
        """What ``record`` should do to the output (:mod:`sealcheck.core.effects`); not
        defined: the built-in record encoding (``docs/formats.md``). One that also takes a
        ``version`` parameter (``effect(self, record, version="v1")``) is asked for each of
        :attr:`versions` in turn: versions whose rows differ in a column
        (:mod:`sealcheck.core.version_effects`)."""
        raise NotImplementedError

    def migrate(self, row: Mapping[str, Any], version: str) -> Mapping[str, Any]:
        """A row the version before ``version`` wrote, as it reads once ``version`` runs; not
        defined: with ``version``'s new columns null (what ``ADD COLUMNS`` gives old rows)."""
        raise NotImplementedError

    def effect_mapping(self) -> EffectMapping | None:
        """:meth:`effect` when the descriptor defines it (the first version's, when it takes a
        version)."""
        if type(self).effect is Job.effect:
            return None
        effect: Callable[..., Effects] = self.effect  # it may take a version
        if self.versions and _takes_version(effect):
            return functools.partial(effect, version=self.versions[0])
        return self.effect

    def version_effects(self) -> VersionEffects | None:
        """Each version's :meth:`effect` and the descriptor's :meth:`migrate`, when its
        ``effect`` takes a version and it declares two or more (None otherwise: every version
        maps records alike)."""
        if type(self).effect is Job.effect or len(self.versions) < 2:
            return None
        effect: Callable[..., Effects] = self.effect  # it takes a version
        if not _takes_version(effect):
            return None
        mappings = tuple((v, functools.partial(effect, version=v)) for v in self.versions)
        migrate = None if type(self).migrate is Job.migrate else self.migrate
        return VersionEffects(mappings, migrate)

    def container_image(self) -> str:
        """The tag its containers run (``--backend containers``): :attr:`image`, or one built
        (once; then found by its hash) from the descriptor's installed project
        (:func:`sealcheck.systems.job_image.project_image`)."""
        if self.image:
            return self.image
        from sealcheck.systems.job_image import project_image

        return project_image(self)

    def builds_image(self) -> bool:
        """Whether :meth:`container_image` builds its image from the installed project: it
        names no :attr:`image` and keeps this class's :meth:`container_image`."""
        return not self.image and type(self).container_image is Job.container_image

    def images(self) -> Sequence[Callable[[], str]]:
        """:meth:`container_image` (built before a containers run starts)."""
        return (self.container_image,)

    def offers(self, backend: str) -> frozenset[str]:
        """Its failpoints and crash windows (when it has some), a Spark standalone cluster its
        driver can submit to (``--spark cluster``: :attr:`JobRun.master`) and, locally, its
        directory on a lazy disk (``lazy-disk``: the ``boundary`` and ``crash-at-sync``
        nemeses; ``power-cut``: ``lost-writes``, named only)."""
        lazy = {"lazy-disk", "power-cut"} if backend == "local" else set()
        return super().offers(backend) | {"spark-cluster"} | lazy

    def deploy(self, backend: Backend, settings: Settings, work: Path, logs: Path) -> JobDeployment:
        """The job's directory under ``work`` (and the cluster, with ``--spark cluster``)."""
        return JobDeployment(self, backend, settings, work, logs)


def _takes_version(effect: Callable[..., Effects]) -> bool:
    """Whether a descriptor's ``effect`` has a ``version`` parameter."""
    try:
        return "version" in inspect.signature(effect).parameters
    except (TypeError, ValueError):  # a callable without a signature Python can read
        return False


def job_output(job: Job, run: JobRun, before: bool = False) -> Output:
    """``job.output(run)``, checked (:func:`sealcheck.systems.job_calls.call_output`); an
    output that takes states only between batches (``between_batches``) is refused too when the
    descriptor declares no windows that tell a batch in flight (:class:`DescriptorError`)."""
    out = call_output(job, run, before)
    if out.between_batches and not any(paired(w) for w in job.windows.values()):
        raise DescriptorError(
            f"{type(job).__name__}.output(run) takes states between batches (between_batches), "
            "but the descriptor declares no windows that tell a batch in flight: add "
            'windows = sealcheck.streaming_windows("checkpoint")'
        )
    return out


def check_job(job: Job, run: JobRun) -> None:
    """Call ``job``'s ``output``, ``command`` and ``environment`` with ``run`` (before the run
    starts: :meth:`JobRun.placeholder`; ``output`` as the first of its versions sees it, as at
    the run's start; ``command`` and ``environment`` as each of them) and refuse, in one line
    (:class:`DescriptorError`), one that raises or returns what the harness cannot use."""
    first = run.of_version(job.versions[0]) if job.versions else run
    job_output(job, first, before=True)  # as at the run's start: the first version's
    commands(job, run, before=True)


def commands(
    job: Job, run: JobRun, before: bool = False
) -> dict[str, tuple[list[str], dict[str, str]]]:
    """The command and environment of every version of ``job`` ("": the one of a job that
    declares none), from the descriptor with ``run`` as each version sees it (``before``: the
    run's placeholder values, :func:`check_job`)."""
    out = {}
    for v in job.versions or ("",):
        seen = run.of_version(v)
        out[v] = call_command(job, seen, before), call_environment(job, seen, before)
    return out


class JobDeployment:
    """A :class:`Job` on one backend for one run (:class:`sealcheck.systems.api.Deployment`)."""

    def __init__(
        self, job: Job, backend: Backend, settings: Settings, work: Path, logs: Path
    ) -> None:
        self.job, self.backend, self.settings = job, backend, settings
        self.root = (work / "job").resolve()
        #: the job's directory as a lazy mount over ``work/job-durable`` (when a nemesis
        #: needs one: ``Settings.lazy_store``)
        self.disk = (
            LazyDisk(work / "job-durable", self.root, logs / "lazyfs.log")
            if settings.lazy_store
            else None
        )
        #: in containers, the job's image for its incarnations and the cluster's workers
        image = self.image = job.container_image if backend.runs_images else None
        #: what its containers (and a cluster's) see at the host's paths: its directory and,
        #: in containers, the jar cache the paths it names are in (``sealcheck.delta_jars()``)
        self.shared: tuple[str, ...] = (str(self.root),)
        if image is not None and jars_dir().is_dir():
            self.shared += (str(jars_dir()),)
        self.cluster = (
            SparkCluster(backend, logs, shared=self.shared, image=image)
            if settings.spark == "cluster"
            else None
        )
        #: the version the next incarnation runs (:meth:`switch`)
        self.version = job.versions[0] if job.versions else ""
        self.run = JobRun(
            backend.bootstrap,
            settings.topic,
            self.root,
            settings.max_records_per_step,
            settings.broken,
            self.cluster.url if self.cluster is not None else None,
            backend.name,
            self.version,
        )
        self.out = job_output(job, self.run)  # one output, whichever version writes it
        #: the command and environment of each version (:meth:`start` asks the descriptor
        #: once the run's values are all known)
        self.commands: dict[str, tuple[list[str], dict[str, str]]] = {}
        if self.out.between_batches:
            root, windows = self.root, tuple(job.windows.values())
            self.out.watch_batches(lambda: batch_boundary(root, windows))
        watch_checkpoint(self.out, self.root, job.windows.values())

    @property
    def store(self) -> str:
        """The job's directory."""
        return str(self.root)

    def start(self) -> None:
        """The job's directory (mounted, on a lazy disk); the cluster (``--spark cluster``);
        then the descriptor's ``command(run)`` and ``environment(run)`` tried with the run's
        own values, so one that fails with them is a :class:`DescriptorError` here, before any
        incarnation starts, rather than an incarnation that cannot start."""
        self.root.mkdir(parents=True, exist_ok=True)
        if self.disk is not None:
            self.disk.start()
        if self.cluster is not None:
            self.cluster.start()
        self.commands = commands(self.job, self.run)

    @property
    def current(self) -> str:
        """The version the next incarnation runs ("" for a job that declares none)."""
        return self.version

    def switch(self, version: str) -> None:
        """Every incarnation from the next one on runs ``version`` (one of
        :attr:`Job.versions`)."""
        if version not in self.job.versions:
            known = ", ".join(self.job.versions) or "none"
            raise ValueError(f"{self.job.name} has no version {version!r} (its versions: {known})")
        self.version = version

    def stop(self) -> None:
        """Stop the cluster (``--spark cluster``); close the output's connection (an output
        observed from outside keeps one); unmount the lazy disk."""
        try:
            if self.cluster is not None:
                self.cluster.stop()
        finally:
            try:
                self.out.close()
            finally:
                if self.disk is not None:
                    self.disk.stop()

    def launch(self, incarnation: int) -> Launch:
        """The job's command, with its environment, of the version it runs now, as
        :meth:`start` had them from the descriptor (the run does not change after it)."""
        if not self.commands:  # launched without a start (a direct caller)
            self.commands = commands(self.job, self.run)
        argv, env = self.commands[self.version]
        return Launch(
            program=tuple(argv[:1]),
            args=tuple(argv[1:]),
            env={"PYTHONUNBUFFERED": "1", **env},
            image=self.image,
            entrypoint=in_image(argv[:1]),
            shared=self.shared,
            workdir=str(self.root),  # Spark's spark-warehouse/ and the like stay in the run
        )

    def uppers(self) -> dict[str, int] | None:
        """The output's uppers."""
        return self.out.uppers()

    def progress(self) -> Progress | None:
        """The output's uppers and last sealed bindings — or, for an output without bindings,
        when it or anything in the job's directory (its checkpoint: a batch under way) last
        changed, *now* while one of its crash windows is open (its newest ``offsets/N`` without
        ``commits/N``: a batch in flight) (:meth:`sealcheck.systems.api.Progress.settled`), and
        the end offsets every query's checkpoint under it has committed, which prove it caught
        up without waiting (:func:`sealcheck.systems.job_checkpoint.proven`)."""
        settled = settling(self.out.progress(), self.root, self.job.windows.values())
        return proven(settled, self.root, self.settings.topic)

    def capture(self, since_captured: dict[str, int]) -> Capture | None:
        """The states an output observed from outside took since the last capture (an
        output that keeps its own steps apart, as Delta does, has none to give)."""
        return self.out.capture(since_captured)

    def export(self, run_dir: Path) -> None:
        """The output, exported."""
        self.out.export(run_dir)

    def disks(self) -> Mapping[str, Disk]:
        """``store``: the job's directory, when it is on a lazy disk."""
        return {"store": self.disk} if self.disk is not None else {}

    def nodes(self, role: str) -> Sequence[Node]:
        """The Spark cluster's nodes (``--spark cluster``)."""
        return self.cluster.nodes(role) if self.cluster is not None else []
