"""The live part of a run, on any backend and for any system under test: Kafka, the
supervised incarnations, the observer, the producers, the fault schedule, the final phase
and the dumps the checkers need.

Runs in the harness's main thread (it outlives every process it spawns). Every resource is
registered with the run's :class:`Teardown` as soon as it exists, so a failure anywhere still
stops everything.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sealcheck.core.effects import EffectError
from sealcheck.harness.run.config import ConfigError
from sealcheck.harness.run.faults import FaultPhase
from sealcheck.harness.run.halt import RunHalt
from sealcheck.harness.run.leave import STOP_KAFKA, STOP_SERVICES, Kept
from sealcheck.harness.run.observer import Observer
from sealcheck.harness.run.producers import Producers
from sealcheck.harness.run.progress import Display
from sealcheck.harness.run.shared_kafka import borrow_offered, borrowed
from sealcheck.harness.run.signals import Terminated
from sealcheck.harness.run.supervisor import FailpointFile, SupervisedNode, Supervisor
from sealcheck.harness.run.target import RunTarget, heal_all
from sealcheck.harness.run.workload import TOPIC as TOPIC  # the runner names it from here
from sealcheck.infra.node import Backend
from sealcheck.infra.topic import log_end, read_topic
from sealcheck.nemeses.api import Versions
from sealcheck.rundir.captures import CAPTURES, CaptureWriter
from sealcheck.rundir.files import TOPIC as TOPIC_FILE
from sealcheck.rundir.files import UPDATES, write_topic
from sealcheck.rundir.history import EXPORT_FAILED, NEVER_STARTED, VERSION
from sealcheck.rundir.history_writer import HistoryWriter, record_inputs
from sealcheck.rundir.names import sut_log
from sealcheck.rundir.version_effects import split_export, write_expected
from sealcheck.systems import CapturesSteps, Deployment, Settings, Unjudgeable
from sealcheck.systems.job_calls import DescriptorError

if TYPE_CHECKING:
    from sealcheck.harness.run.test import Test


class DescriptorRefused(ConfigError):
    """A descriptor's own method failed with the run's own values as it deployed
    (:class:`~sealcheck.systems.job_calls.DescriptorError`): the user's mistake, like a bad
    setting (exit 254), but found once Kafka had started — the run directory holds why
    (``never-started``) and no verdict."""


class Teardown:
    """Runs cleanup steps in reverse order; keeps going past errors, honours Ctrl-C; finishes
    every step on SIGTERM (:class:`sealcheck.harness.run.signals.Terminated`), then raises it."""

    def __init__(self, display: Display) -> None:
        self.steps: list[tuple[str, Callable[[], object]]] = []
        self.display = display

    def push(self, what: str, fn: Callable[[], object]) -> None:
        """Run ``fn`` at teardown (last pushed, first run)."""
        self.steps.append((what, fn))

    def run(self) -> None:
        """Run every step; a step that raises is reported and skipped."""
        terminated = False
        while self.steps:
            what, fn = self.steps.pop()
            try:
                fn()
            except Terminated:  # a stop asked for: this step was cut short, the rest runs
                terminated = True
            except Exception as exc:  # teardown goes on; Ctrl-C (BaseException) does not
                self.display.log(f"warning: {what}: {type(exc).__name__}: {exc}")
        if terminated:
            raise Terminated


class Session:
    """One run's processes and threads, from Kafka start to the topic dump.

    :meth:`run` is the list of phases, each a method; a phase that starts something registers
    its stop with the run's :class:`Teardown` at once and keeps it on the session (``backend``,
    ``deployment``, ``supervisor``, ``observer``, ``producers``, ``target``) for the phases
    after it."""

    backend: Backend
    deployment: Deployment
    fp: FailpointFile
    supervisor: Supervisor
    observer: Observer
    producers: Producers
    target: RunTarget

    def __init__(
        self,
        test: Test,
        run_dir: Path,
        history: HistoryWriter,
        display: Display,
        teardown: Teardown,
    ) -> None:
        self.test, self.cfg, self.run_dir = test, test.spec, run_dir
        self.history, self.display, self.teardown = history, display, teardown
        # absolute, whatever ``--runs`` says: the paths handed to the backend and the system
        # reach processes that may start in directories of their own
        self.work = run_dir.absolute() / "work"
        self.logs = run_dir.absolute() / "logs"
        self.kept: Kept | None = None  # with --leave-running, once the run is over
        #: the run's topic: ``upserts``, or ``upserts-<run id>`` on a borrowed broker
        self.topic = TOPIC
        #: why the run stopped early, if it did (:mod:`sealcheck.harness.run.halt`)
        self.halt = RunHalt(history, display.log)

    def run(self) -> str:
        """Run every phase, in order; return why the final phase failed ("" when it caught up).

        1. :meth:`_start_kafka`: the backend (its images built first), Kafka and the topic,
           provisioned for what the built nemeses require (:attr:`Test.requires`), or a
           shared broker borrowed (:mod:`sealcheck.harness.run.shared_kafka`);
        2. :meth:`_start_services`: the system's deployment and its long-lived services;
        3. :meth:`_start_supervisor`: incarnations of the system under the supervisor;
        4. :meth:`_start_observer`: the observer of its seals (and of its captures);
        5. :meth:`_set_up_nemeses`: the producers (not started yet), the nemeses' target, each
           nemesis set up on it;
        6. :meth:`_warm_up`: the producers start; wait for the first sealed step;
        7. :meth:`_fault_phase`: the schedule in real time (or why no fault could happen);
        8. :meth:`_heal`: stop producing, heal every nemesis, tear each down;
        9. :meth:`_final_phase`: wait until the system has sealed the log end;
        10. :meth:`_dump`: the topic and the system's export into the run directory;
        11. :meth:`_keep`: with ``--leave-running``, what outlives the teardown.

        A run halted early (:attr:`halt`: the job keeps exiting by itself, its output holds a
        row without a key) skips what is left of the warm-up, the faults and the catch-up, and
        goes on from 8; the reason returned is then the halt's.
        """
        self.work.mkdir(parents=True, exist_ok=True)
        self._start_kafka()
        self._start_services()
        self._start_supervisor()
        self._start_observer()
        self._set_up_nemeses()
        self._warm_up()
        self._fault_phase()
        self._heal()
        reason = self._final_phase()
        reason = self._dump(reason)
        self._keep()
        for e in self.producers.errors:
            self.display.log(f"producer: {e}")
        return reason

    def _start_kafka(self) -> None:
        """The backend for this run, its images, and Kafka with the topic (brokers on lazy
        disks when a built nemesis requires them; an offered broker borrowed when it may:
        :func:`~sealcheck.harness.run.shared_kafka.borrow_offered`)."""
        cfg = self.cfg
        self.display.update(phase=f"starting Kafka ({cfg.backend})", duration_s=cfg.duration_s)
        run_id = f"{self.run_dir.parent.name}-{self.run_dir.name}".lower()
        backend = self.backend = self.test.backend(cfg.brokers, self.work, run_id)
        if backend.runs_images:  # build (or find) them now, not while the first one starts
            for image in self.test.system.images():
                self.display.log(f"image: {image()}")
        self.teardown.push(STOP_KAFKA, lambda: backend.stop(self.logs))
        self.topic = borrow_offered(self.test, backend, run_id, self.display.log)
        lazy_brokers = "broker-lazy-disk" in self.test.requires
        backend.start(self.topic, cfg.partitions, lazy_brokers=lazy_brokers)

    def _start_services(self) -> None:
        """Deploy the system under test on the backend (its store on a lazy disk when a built
        nemesis requires one) and start its services; record the setup. A descriptor whose own
        method fails with the run's values (:class:`DescriptorError`) ends the run here as a
        :class:`DescriptorRefused`, its reason recorded (:data:`NEVER_STARTED`)."""
        cfg = self.cfg
        settings = Settings(
            self.topic,
            cfg.max_records_per_step,
            cfg.broken,
            cfg.spark,
            lazy_store="lazy-disk" in self.test.requires,
        )
        try:  # a descriptor that fails with the run's own values: refused, in one line
            deployment = self.test.system.deploy(self.backend, settings, self.work, self.logs)
            self.deployment = deployment
            self.teardown.push(STOP_SERVICES, deployment.stop)
            self.display.update(phase="starting the system's services")
            deployment.start()
        except DescriptorError as exc:  # said once, by the caller; the history keeps why
            self.history.append("harness", "info", NEVER_STARTED, {"reason": str(exc)})
            raise DescriptorRefused(str(exc)) from None
        setup = {
            "backend": cfg.backend,
            "system": self.test.system.name,
            "bootstrap": self.backend.bootstrap,
            "topic": self.topic,
            "kafka": "borrowed" if borrowed(self.backend) else "own",
            "store": deployment.store,
        }
        self.history.append("harness", "info", "setup", setup)

    def _incarnation(self, n: int) -> Any:
        """Incarnation ``n`` of the system under test, unstarted (the supervisor starts it)."""
        launch = self.deployment.launch(n)
        version = self._version()
        if version:  # which version wrote which batches: the report's version timeline
            self.history.append("harness", "info", VERSION, {"incarnation": n, **version})
        log = self.logs / sut_log(n)
        return self.backend.incarnation(launch, f"sut-{n}", log, self.fp.path)

    def _start_supervisor(self) -> None:
        """The supervisor, which starts incarnation after incarnation of the system."""
        self.fp = fp = FailpointFile(self.work / "fp" / "failpoints")
        fired = self.test.system.fired_failpoint
        self.supervisor = Supervisor(
            self._incarnation,
            self.history,
            fp,
            fired,
            halt=self.halt,
            say=self.display.log,
            # the supervisor's measure of progress: the observer's advances (it starts next)
            progress=lambda: self.observer.advances if hasattr(self, "observer") else 0,
            refusal_codes=self.test.system.refusal_exit_codes,
        )
        self.teardown.push("stop the system under test", self.supervisor.stop)
        self.supervisor.start()

    def _start_observer(self) -> None:
        """The observer of the system's seals (and of its captures, when it takes them)."""
        deployment = self.deployment
        steps = deployment if isinstance(deployment, CapturesSteps) else None
        self.observer = Observer(
            deployment.uppers,
            self.history,
            capture=steps.capture if steps is not None else None,
            captures=CaptureWriter(self.run_dir / CAPTURES) if steps is not None else None,
            halt=self.halt,
        )
        self.teardown.push("stop the observer", self.observer.stop)
        self.observer.start()

    def _set_up_nemeses(self) -> None:
        """The producers (started by :meth:`_warm_up`), what the nemeses act on, and every
        nemesis set up on it."""
        backend, deployment, observer = self.backend, self.deployment, self.observer
        self.producers = Producers(
            backend.bootstrap,
            self.topic,
            self.cfg.workload,
            self.test.producer_seeds,
            self.history,
            self.logs / "producers.log",
            self.test.system.record_maker(),
        )
        self.teardown.push("stop the producers", self.producers.stop)
        self.target = RunTarget(
            backend,
            SupervisedNode(self.supervisor),
            self.fp,
            self.test.plan_info.roles,
            {**backend.disks(), **deployment.disks()},
            lambda: min(observer.last.values(), default=0),
            deployment.nodes,
            (self.test.system.windows, Path(deployment.store)),
            self._versions(),
        )
        for n in self.test.nemeses.values():
            n.setup(self.target)

    def _versions(self) -> Versions | None:
        """The deployment as the system's versions, when it declares two or more."""
        many = len(self.test.system.versions) > 1
        return self.deployment if many and isinstance(self.deployment, Versions) else None

    def _version(self) -> dict[str, str]:
        """``version``: the one the next incarnation runs."""
        versions = self._versions()
        return {"version": versions.current} if versions is not None else {}

    def _fault_phase(self) -> None:
        """The schedule in real time (ended early when the run is halted); when no
        incarnation could start, or the run was halted before, every planned fault says why
        it did not happen."""
        test, cfg = self.test, self.cfg
        where = (self.target, cfg.duration_s, self.history, self.display, self._status)
        faults = FaultPhase(test.schedule, test.nemeses, *where, halt=self.halt)
        if self.supervisor.start_error is not None:
            faults.skip_all("no incarnation of the system under test could be started")
        elif self.halt.reason is not None:
            faults.skip_all(f"the run was halted: {self.halt.reason}")
        else:
            self.supervisor.faults.mark(bool(test.schedule))  # no fault planned: none explains
            faults.run()

    def _heal(self) -> None:
        """Stop producing, heal every nemesis (each heal recorded) and tear each down."""
        self.display.update(phase="final phase: healing")
        self.producers.stop()
        for line in heal_all(self.test.nemeses, self.target, self.history):
            self.display.log(f"healed {line}")
        for n in self.test.nemeses.values():
            n.teardown(self.target)
        self.supervisor.faults.mark(False)

    def _final_phase(self) -> str:
        """Wait until the system has sealed the log end, then stop it and the observer; why
        it did not ("" when it did)."""
        if self.supervisor.start_error is not None:  # nothing ran, nothing can be judged
            reason = self._harness_failure(NEVER_STARTED, self.supervisor.start_error)
        elif self.halt.reason is not None:  # waiting is pointless: no catch-up
            reason = self.halt.reason
        else:
            reason = self._catch_up()
        self.supervisor.stop()
        self.observer.stop()
        return reason

    def _dump(self, reason: str) -> str:
        """The topic and the system's export into the run directory, and the manifest of the
        inputs; ``reason`` with why the dump or the export failed, if either did (each also
        recorded as an :data:`EXPORT_FAILED` op, so the verdict is UNKNOWN)."""
        self.display.update(phase="dumping the topic and the store")
        reasons, dumped = [reason], False
        try:
            write_topic(read_topic(self.backend.bootstrap, self.topic), self.run_dir / TOPIC_FILE)
            dumped = True
        except Exception as exc:  # Kafka cannot be read: judged UNKNOWN, not a crash
            why = f"the dump of the topic failed: {type(exc).__name__}: {exc}"
            reasons.append(self._harness_failure(EXPORT_FAILED, why))
        system, columns = self.test.system, tuple[str, ...]()
        try:
            if dumped:  # what each record should do, by the system's mapping(s), if it has one
                columns = write_expected(
                    self.run_dir, system.effect_mapping(), system.version_effects()
                )
            try:
                self.deployment.export(self.run_dir)
            except Unjudgeable:  # the states before it were written: split them too
                if columns and (self.run_dir / UPDATES).exists():
                    split_export(self.run_dir, columns)
                raise
            if columns:  # judged apart: the ``versions`` checker
                split_export(self.run_dir, columns)
        except Unjudgeable as exc:  # the states before it were exported: the run is halted
            if self.halt.set(str(exc), by="export"):
                reasons.append(str(exc))
            elif str(exc) != self.halt.reason:  # halted for another cause: kept all the same
                reasons.append(self._harness_failure(EXPORT_FAILED, str(exc)))
        except Exception as exc:  # the store cannot be read: judged UNKNOWN, not a crash
            what = "mapping of records" if isinstance(exc, EffectError) else "export of the store"
            why = f"the {what} failed: {type(exc).__name__}: {exc}"
            reasons.append(self._harness_failure(EXPORT_FAILED, why))
        record_inputs(self.history, self.run_dir)
        return "; ".join(filter(None, reasons))

    def _keep(self) -> None:
        """With ``--leave-running``, Kafka and the services outlive the teardown
        (:mod:`sealcheck.harness.run.leave`)."""
        if self.cfg.leave_running:
            keep = (self.backend, self.deployment, self._incarnation, self.supervisor.incarnations)
            self.kept = Kept.take(self.teardown, *keep, self.fp, self.logs)

    def _harness_failure(self, f: str, reason: str) -> str:
        """Record why the run cannot be judged (``sealcheck.rundir.history`` makes the verdict
        UNKNOWN with this reason) and return it; printed unless the run was halted (the halt's
        line said why already: an output never written cannot be exported)."""
        self.history.append("harness", "info", f, {"reason": reason})
        if not self.halt.is_set():
            self.display.log(reason)
        return reason

    def _warm_up(self, timeout_s: float = 300.0) -> None:
        """Wait until the system has sealed its first step, so faults hit a working system
        (its first Spark query is slow: 45-60 s in a container beside three brokers on two
        cores, over 130 s on a loaded machine); the schedule's clock starts after this. A
        system that seals nothing in ``timeout_s`` still gets its faults, and says so."""
        self.producers.start()
        sup, obs = self.supervisor, self.observer
        self.display.update(phase="warm-up: waiting for the first sealed step")
        start = time.monotonic()
        while obs.last.get("data", 0) < 1 and time.monotonic() - start < timeout_s:
            if sup.start_error is not None or self.halt.wait(0.1):
                return
            self._status(time.monotonic() - start)
        took = round(time.monotonic() - start, 2)
        sealed = obs.last.get("data", 0) >= 1
        self.history.append("harness", "info", "warmed-up", {"took_s": took, "sealed": sealed})
        self.display.log(
            f"warm-up: first step sealed after {took}s"
            if sealed
            else f"warm-up: nothing sealed after {took}s; starting the faults anyway"
        )

    def _status(self, elapsed: float) -> None:
        """Show the progress so far: writes by outcome, the uppers, the incarnation."""
        counts = self.history.counts
        self.display.update(
            elapsed_s=elapsed,
            writes={t: counts[("write", t)] for t in ("ok", "info", "fail")},
            uppers=dict(self.observer.last),
            incarnation=self.supervisor.incarnations,
        )

    def _catch_up(self) -> str:
        """Wait until the store has sealed the log end; the reason if it does not in time."""
        self.display.update(phase="final phase: catching up")
        bootstrap, deployment = self.backend.bootstrap, self.deployment
        sup, obs = self.supervisor, self.observer
        start = time.monotonic()
        deadline = start + self.cfg.final_timeout_s
        while True:  # a broker healed a moment ago may not lead its partitions yet
            try:
                end = log_end(bootstrap, self.topic)
                break
            except Exception as exc:
                if time.monotonic() >= deadline:
                    why = f"{type(exc).__name__}: {exc}"
                    return f"could not read the log end from Kafka in time: {why}"
                time.sleep(1.0)
        self.history.append("harness", "info", "log-end", {str(p): o for p, o in end.items()})
        while time.monotonic() < deadline:
            try:
                progress = deployment.progress()  # None while the store cannot be read: again
            except Unjudgeable as exc:  # the observer may not have met it yet
                self.halt.set(str(exc), by="final phase")
                return self.halt.reason or str(exc)
            if self.halt.reason is not None:  # the job keeps exiting by itself, say
                return self.halt.reason
            if progress is not None and progress.covers(end):
                took = round(time.monotonic() - start, 2)
                value: dict[str, object] = {"took_s": took}
                how = ""
                if progress.settle_s is not None:  # no bindings: the checkpoints proved it
                    value["proven"] = "checkpoint"
                    how = " (its checkpoints committed it)"
                self.history.append("harness", "info", "caught-up", value)
                self.display.log(f"caught up with the log end {end} in {took}s{how}")
                return ""
            if (
                progress is not None
                and sup.running() is not None
                and progress.settled(time.monotonic(), sup.started_at, start)
            ):
                took, quiet = round(time.monotonic() - start, 2), progress.settle_s
                self.history.append(
                    "harness", "info", "caught-up", {"took_s": took, "settled_s": quiet}
                )
                self.display.log(f"caught up: the output did not change for {quiet}s ({took}s)")
                return ""
            refusing = sup.refusing(self.test.system.refusal_exit_codes, 3)
            if refusing:
                reason = (
                    f"liveness: {self.cfg.system} refuses to resume ({refusing}: its last 3 "
                    f"incarnations exited with a code that says the store cannot be resumed; "
                    f"sealed: {obs.last}, log end {end})"
                )
                break
            self._status(time.monotonic() - start)
            self.halt.wait(0.25)  # woken at once by a halt
        else:
            reason = (
                f"liveness: {self.cfg.system} did not seal the log end {end} within "
                f"{self.cfg.final_timeout_s:.0f}s after healing (sealed: {obs.last})"
            )
        self.history.append("harness", "info", "not-caught-up", {"reason": reason})
        self.display.log(reason)
        return reason
