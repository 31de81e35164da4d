"""The system-under-test descriptor: everything the harness needs to know of a system it tests,
as data with defaults on one small base class, so any system can be tested without the harness
naming it.

A descriptor (:class:`SystemUnderTest`) says which failpoints the system has and how to arm
them, which deliberately broken variants it offers, and how to *deploy* it on a backend for one
run (:meth:`SystemUnderTest.deploy`). A deployment (:class:`Deployment`) says how to start an
incarnation (:class:`sealcheck.core.nodes.Launch`: a local command or a container image), how
far the system has sealed (its uppers; whether it covers the log end), and how to *export* its
persisted output into the checkers' format (``sealcheck.rundir.files``: collections of ``(key,
value, ts, diff)`` updates with their uppers — ``bindings``, ``data``, ``errors``).

The roles of a run's nodes (:class:`sealcheck.core.roles.Role`) follow from what the system
offers on a backend (:meth:`SystemUnderTest.offers`): a backend's database is a role only where
the system keeps its store there (``database``), a Spark cluster's workers only where it submits
to one (``spark-cluster``, with ``--spark cluster``): :func:`sealcheck.systems.roles.run_roles`.

The failpoint contract: an incarnation reads the file named by the environment variable in
:attr:`sealcheck.core.nodes.Launch.failpoint_env` whenever it changes, arms the
``name=crash@1`` spec it holds, and removes the file just before crashing there; it logs the
firing so that :meth:`SystemUnderTest.fired_failpoint` can find it in its log.

A system under test is registered by name: a built-in one in
:data:`sealcheck.systems.registry.SYSTEMS`, a user's through the entry-point group
``sealcheck.systems`` of their package, or named ``package.module:Factory``
(``docs/your-own-job.md``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable

from sealcheck.core.effects import EffectMapping
from sealcheck.core.nodes import Disk, Launch, Node
from sealcheck.core.records import Draw, NewRecord
from sealcheck.core.version_effects import VersionEffects
from sealcheck.core.windows import CrashWindow, boundaries
from sealcheck.infra.node import Backend
from sealcheck.rundir.captures import Capture


@dataclass(frozen=True)
class Settings:
    """What a run asks of its system under test."""

    topic: str
    max_records_per_step: int
    broken: str | None = None
    #: where the system's Spark driver runs: ``connect`` (a long-lived Spark Connect server
    #: per run, the default), ``local`` (inside each incarnation) or ``cluster`` (as with
    #: ``connect``, or inside each incarnation for a system without a server, submitting to
    #: the run's Spark standalone cluster: :mod:`sealcheck.systems.spark_cluster`)
    spark: str = "connect"
    #: keep the store on a filesystem that can lose un-fsynced writes (capability
    #: ``lazy-disk``; asked for when a nemesis needs it)
    lazy_store: bool = False


@dataclass(frozen=True)
class Progress:
    """How far a system has sealed: its uppers and the offsets bound by its last sealed step."""

    uppers: dict[str, int]
    bound: dict[int, int]
    #: an output that keeps no bindings (a sink observed from outside) cannot show that it
    #: reached the log end: it has *settled* once nothing changed in it for this long with
    #: the job running (the harness decides: :meth:`settled`); None: ``bound`` says it
    settle_s: float | None = None
    #: when such an output last changed (``time.monotonic()``; 0: never seen to change)
    changed_at: float = 0.0
    #: for such an output, the end offsets every query of the job has committed, read from
    #: its checkpoints after the output (:func:`sealcheck.systems.job_checkpoint.committed_end`):
    #: what it holds the effect of, proven rather than waited for; None: nothing proves it
    proven: dict[int, int] | None = None

    def covers(self, log_end: dict[int, int]) -> bool:
        """True when data and errors are sealed through a step whose bindings reach
        ``log_end`` (``bound``: the bindings of the step below the lower of the two uppers) —
        for an output without bindings (:attr:`settle_s`), when what the job's checkpoints
        committed reaches it (:attr:`proven`; none: see :meth:`settled`)."""
        wanted = {p: o for p, o in log_end.items() if o > 0}
        if self.settle_s is not None:
            done = self.proven
            return done is not None and all(done.get(p, 0) >= o for p, o in wanted.items())
        t = min(self.uppers.get("data", 0), self.uppers.get("errors", self.uppers.get("data", 0)))
        return t > 0 and all(self.bound.get(p, 0) >= o for p, o in wanted.items())

    def settled(self, now: float, started_at: float, healed_at: float = 0.0) -> bool:
        """For an output without bindings: nothing changed for :attr:`settle_s` since the
        running incarnation started and last changed it — or for three times that when it
        has not changed it at all (a job that restarted slowly may not have read yet). The
        quiet counts from ``healed_at`` on at the earliest: before the heal a fault (a broker
        down, the job paused) may have been what kept the output still."""
        if self.settle_s is None:
            return False
        if self.changed_at >= started_at:
            return now - max(self.changed_at, healed_at) >= self.settle_s
        return now - max(started_at, healed_at) >= 3 * self.settle_s


class Unjudgeable(RuntimeError):
    """The system's output holds what cannot be judged — a row without a key, a key column
    that is not there — so waiting for more is pointless. An output raises it from
    ``uppers()`` (and so ``progress()``), ``capture()`` or ``export()`` with one line saying
    what it found and what to do; it keeps raising it from then on. The harness halts the run
    at the first one (``harness info halted``: :mod:`sealcheck.harness.run.halt`) and judges
    the states seen before it; the verdict is then UNKNOWN with that line (INVALID when those
    states already show a violation). ``export()`` writes those states before raising it."""


class Deployment(Protocol):
    """One system under test deployed on one backend for one run."""

    @property
    def store(self) -> str:
        """Where its persisted state lives, as the host reaches it (for people and logs)."""

    def start(self) -> None:
        """Start what the system needs beside its incarnations (e.g. a Spark server) and wait
        until it serves; nothing for a system that needs nothing."""

    def stop(self) -> None:
        """Stop what :meth:`start` started (teardown: keeps going past errors)."""

    def launch(self, incarnation: int) -> Launch:
        """How to start incarnation ``incarnation`` (0, 1, …)."""

    def uppers(self) -> dict[str, int] | None:
        """Its collections' uppers now (cheap: sampled 4 times a second); None while the store
        does not exist yet or cannot be reached."""

    def progress(self) -> Progress | None:
        """Its uppers and last sealed bindings (None while unreachable)."""

    def export(self, run_dir: Path) -> None:
        """Write its persisted output into ``run_dir`` in the checkers' format
        (:func:`sealcheck.rundir.files.write_export`), plus whatever raw copy helps a
        post-mortem."""

    def disks(self) -> Mapping[str, Disk]:
        """Its lazy filesystems by name (``store``), when ``Settings.lazy_store`` asked for
        one; empty otherwise."""

    def nodes(self, role: str) -> Sequence[Node]:
        """Nodes of its own that nemeses act on by role (``spark-worker``, ``spark-executor``
        of a Spark cluster); empty for roles it has none of."""


@runtime_checkable
class CapturesSteps(Protocol):
    """A deployment whose store merges sealed steps (compaction) offers this too, so that
    every sealed step is judged one by one: the harness calls :meth:`capture` right after it
    observes an upper advance, before compaction can reach the new steps
    (:mod:`sealcheck.rundir.captures`). A deployment whose export keeps every step apart (the
    delta-streaming job: Delta's change data feed keeps every version) does not need it."""

    def capture(self, since_captured: dict[str, int]) -> Capture | None:
        """In one consistent read of the store: the updates of every collection
        from step ``since_captured[c]`` (0 when absent) to its upper now, as far as
        compaction has not merged them (:func:`sealcheck.rundir.captures.plan`). None when the store
        cannot be read now (the harness tries again at its next sample).

        ``since_captured`` also says what the harness has kept: every step below it is in
        ``captures.arrows``. A store with read holds may let compaction merge up to it, and
        no further (keeping at most :attr:`Settings.hold_steps` steps for it)."""


#: an empty mapping for defaults (read-only, so no descriptor can change another's)
NOTHING: Mapping[str, Any] = MappingProxyType({})


class SystemUnderTest:
    """A system Sealcheck can test: a base class whose every member has a default but
    :meth:`deploy`, so a descriptor states only what differs. A user's system (registered by
    an entry point, or named ``package.module:Factory``: :mod:`sealcheck.systems.registry`)
    subclasses it — usually through :class:`sealcheck.systems.job.Job`, which deploys a job
    from a command and an output.

    A descriptor is rebuilt by name in every process of a run (the pytest plugin's child
    runs, ``--replay``, ``shrink``, ``suite``, ``selftest``): its factory is called with
    :meth:`options`, so a descriptor with settings is a (frozen) dataclass whose fields are
    JSON values.
    """

    #: its name in reports; the registry's name, or the ``module:Factory`` it was built from
    #: when empty
    name: str = ""
    #: its failpoints: name -> where it sits (empty: the ``failpoint`` nemesis is refused)
    failpoints: Mapping[str, str] = NOTHING
    #: failpoints passed only while an incarnation starts
    startup_failpoints: frozenset[str] = frozenset()
    #: failpoints passed only once the system has run a while (planned late)
    late_failpoints: frozenset[str] = frozenset()
    #: failpoints right after a durable write returned (``error`` there: a write that
    #: happened but reported failure; the ``indeterminate`` nemesis)
    commit_failpoints: tuple[str, ...] = ()
    #: a failpoint right before a write (a ``sleep`` there makes a zombie writer)
    stall_failpoint: str | None = None
    #: its crash windows told from outside, by name, paths relative to its directory
    #: (:func:`sealcheck.core.windows.streaming_windows`; empty: the ``window`` nemesis is
    #: refused)
    windows: Mapping[str, CrashWindow] = NOTHING
    #: its store's files on its lazy disk (a regular expression over the mount's paths, e.g.
    #: ``r"\.db-wal$"``) whose first commits after a restart are commit boundaries of their
    #: own (``restart:commit-k``: :func:`sealcheck.core.windows.restart_boundaries`); empty:
    #: none
    commit_files: str = ""
    #: its versions in upgrade order (``("v1", "v2")``): each resumes the one before it from
    #: the same state and output (the ``upgrade`` nemesis switches to the next); empty or one:
    #: no upgrade to make
    versions: tuple[str, ...] = ()
    #: exit codes that mean "this store cannot be resumed": after a few in a row the harness
    #: stops waiting for the system to catch up
    refusal_exit_codes: frozenset[int] = frozenset()
    #: deliberately wrong variants (``--broken``): name -> what it does wrong
    broken_modes: Mapping[str, str] = NOTHING
    #: broken modes that look wrong but are right: the self-test expects them valid
    harmless_modes: frozenset[str] = frozenset()
    #: run settings (``sealcheck.harness.run.config.TestConfig`` names) this system needs
    #: other than the harness's defaults, used where the user's config does not set them —
    #: e.g. a system that needs 15 s to come back from a crash wants faults further apart
    run_defaults: Mapping[str, Any] = NOTHING
    #: backend capabilities it needs on every backend
    #: (``sealcheck.core.capabilities.CAPABILITIES``)
    requires: frozenset[str] = frozenset()
    #: capabilities it offers only to nemeses named explicitly, never to the default mix
    opt_in: frozenset[str] = frozenset()

    def offers(self, backend: str) -> frozenset[str]:
        """Capabilities it brings itself on ``backend`` (``failpoints``, ``lazy-disk``,
        ``spark-cluster``; ``database`` where it keeps its store in the backend's database
        server, which makes that server a role of the run). By default ``failpoints``,
        ``crash-windows``, ``commit-boundaries`` and ``versions`` when it has some."""
        held = boundaries(self.windows, self.commit_files)
        return (
            (frozenset({"versions"}) if len(self.versions) > 1 else frozenset())
            | (frozenset({"failpoints"}) if self.failpoints else frozenset())
            | (frozenset({"crash-windows"}) if self.windows else frozenset())
            | (frozenset({"commit-boundaries"}) if held else frozenset())
        )

    def deploy(self, backend: Backend, settings: Settings, work: Path, logs: Path) -> Deployment:
        """Prepare one run on ``backend`` (a store, an image); ``work`` is scratch space,
        ``logs`` where its services' logs go (both absolute in a run: a process started in a
        directory of its own, ``Launch.workdir``, finds them from there)."""
        raise NotImplementedError(f"{type(self).__name__} does not say how to deploy it")

    def fired_failpoint(self, log_text: str) -> str | None:
        """The failpoint an incarnation's log says fired last (None: none); by default the
        failpoint contract's ``{"event": "failpoint", "action": "crash"}`` line."""
        return crash_failpoint(log_text)

    def images(self) -> Sequence[Callable[[], str]]:
        """Builders of the container images it needs (``sealcheck setup --images``)."""
        return ()

    def record(self, draw: Draw) -> NewRecord:
        """The record its topic carries for what Sealcheck drew (:class:`Draw`: which key, which
        kind, the writer, the record's number, a seeded random source), in the job's own format
        — Avro, its own JSON (:mod:`sealcheck.core.records`). Not defined: Sealcheck's own
        records (JSON values under keys ``k<n>``). A descriptor that defines it also says the
        records' ``effect``."""
        raise NotImplementedError(f"{type(self).__name__} does not define record(draw)")

    def record_maker(self) -> Callable[[Draw], object] | None:
        """:meth:`record` when the descriptor defines it (None: Sealcheck's own records)."""
        return None if type(self).record is SystemUnderTest.record else self.record

    def effect_mapping(self) -> EffectMapping | None:
        """What one input record should do to its output (:mod:`sealcheck.core.effects`),
        when it is not the built-in record encoding (None: the built-in one)."""
        return None

    def version_effects(self) -> VersionEffects | None:
        """Each of its :attr:`versions`' own mapping, when their rows differ in a column
        (:mod:`sealcheck.core.version_effects`); None: every version maps records as
        :meth:`effect_mapping` does."""
        return None

    def options(self) -> dict[str, Any]:
        """The settings it is rebuilt with (its dataclass fields; none otherwise): JSON
        values, saved in ``test.json`` beside its name."""
        if dataclasses.is_dataclass(self):
            return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        return {}


def crash_failpoint(log_text: str) -> str | None:
    """The failpoint the last ``{"event": "failpoint", "action": "crash"}`` line of an
    incarnation's log names (None: none) — the failpoint contract's log line, for descriptors'
    :meth:`SystemUnderTest.fired_failpoint`."""
    import json

    fired = None
    for line in log_text.splitlines():
        if line.startswith('{"') and '"event": "failpoint"' in line:
            try:
                event = json.loads(line)
            except ValueError:
                continue  # the line being written when the process was killed
            if event.get("action") == "crash":
                fired = str(event.get("name"))
    return fired
