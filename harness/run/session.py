"""The live part of a run, on any backend and for any system under test: Kafka, the
supervised incarnations, the observer, the producers, the fault schedule, the final phase
and the dumps the checkers need.

Runs in the harness's main thread (it outlives every process it spawns). Every resource is
registered with the run's :class:`Teardown` as soon as it exists, so a failure anywhere still
stops everything.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sealcheck.harness.run.leave import STOP_KAFKA, STOP_SERVICES, Kept
from sealcheck.harness.run.observer import Observer
from sealcheck.harness.run.producers import Producers
from sealcheck.harness.run.progress import Display
from sealcheck.harness.run.supervisor import FailpointFile, SupervisedNode, Supervisor
from sealcheck.infra.node import Backend
from sealcheck.infra.topic import dump_topic, log_end
from sealcheck.nemeses import Action, Nemesis, Node
from sealcheck.rundir.captures import CAPTURES, CaptureWriter
from sealcheck.rundir.files import TOPIC as TOPIC_FILE
from sealcheck.rundir.files import write_topic
from sealcheck.rundir.history import EXPORT_FAILED, NEVER_STARTED, HistoryWriter, record_inputs
from sealcheck.systems import CapturesSteps, Deployment, Settings

if TYPE_CHECKING:
    from sealcheck.harness.run.test import Test

TOPIC = "upserts"


class Teardown:
    """Runs cleanup steps in reverse order; keeps going past errors, honours Ctrl-C."""

    def __init__(self, display: Display) -> None:
        self.steps: list[tuple[str, Callable[[], object]]] = []
        self.display = display

    def push(self, what: str, fn: Callable[[], object]) -> None:
        """Run ``fn`` at teardown (last pushed, first run)."""
        self.steps.append((what, fn))

    def run(self) -> None:
        """Run every step; a step that raises is reported and skipped."""
        while self.steps:
            what, fn = self.steps.pop()
            try:
                fn()
            except Exception as exc:  # teardown goes on; Ctrl-C (BaseException) does not
                self.display.log(f"warning: {what}: {type(exc).__name__}: {exc}")


class RunTarget:
    """What the nemeses act on (:class:`sealcheck.nemeses.Target`): the supervised incarnation as
    the
    ``pipeline`` node, the backend's nodes by role, the failpoints and the network cuts."""

    def __init__(
        self,
        backend: Backend,
        pipeline: SupervisedNode,
        fp: FailpointFile,
        disks: Mapping[str, Any] | None = None,
        sealed: Callable[[], int] = lambda: 0,
        own: Callable[[str], Sequence[Node]] = lambda role: [],
    ) -> None:
        self.backend, self.pipeline, self._failpoints = backend, pipeline, fp
        self._own = own
        self._sealed = sealed
        self._partitions = backend.partitions()
        self._disks = dict(disks or {})

    def nodes(self, role: str) -> Sequence[Node]:
        """``pipeline`` is the supervised incarnation; other roles are the system's own
        (a Spark cluster's workers) or the backend's."""
        if role == "pipeline":
            return [self.pipeline]
        return self._own(role) or self.backend.nodes(role)

    @property
    def failpoints(self) -> FailpointFile:
        """The system under test's failpoint file."""
        return self._failpoints

    @property
    def partitions(self) -> Any:
        """The backend's network cuts (None where it cannot partition)."""
        return self._partitions

    def sealed(self) -> int:
        """Steps the system has sealed, as the observer last saw them."""
        return self._sealed()

    def disks(self) -> Mapping[str, Any]:
        """The lazy filesystems (the system's ``store``, the brokers' ``kafka-N``), when a
        nemesis asked for them."""
        return self._disks


def heal_all(nemeses: dict[str, Nemesis], target: RunTarget, history: HistoryWriter) -> list[str]:
    """Heal every nemesis; each heal is recorded; errors are recorded and skipped."""
    healed = []
    for name, nemesis in nemeses.items():
        try:
            done = nemesis.heal(target)
        except Exception as exc:
            done = [f"heal failed: {type(exc).__name__}: {exc}"]
        history.append("nemesis", "info", "heal", {"nemesis": name, "healed": done})
        healed += [f"{name}: {d}" for d in done]
    return healed


class Session:
    """One run's processes and threads, from Kafka start to the topic dump."""

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
        self.work = run_dir / "work"
        self.kept: Kept | None = None  # with --leave-running, once the run is over

    def run(self) -> str:
        """Run everything; return why the final phase failed ("" when it caught up)."""
        test, cfg, display, history = self.test, self.cfg, self.display, self.history
        self.work.mkdir(parents=True, exist_ok=True)
        display.update(phase=f"starting Kafka ({cfg.backend})", duration_s=cfg.duration_s)
        run_id = f"{self.run_dir.parent.name}-{self.run_dir.name}".lower()
        backend = test.backend(cfg.brokers, self.work, run_id)
        if backend.runs_images:  # build (or find) them now, not while the first one starts
            for image in test.system.images():
                display.log(f"image: {image()}")
        logs = self.run_dir / "logs"
        self.teardown.push(STOP_KAFKA, lambda: backend.stop(logs))
        needs = set().union(*(n.requires for n in test.nemeses.values()))
        backend.start(TOPIC, cfg.partitions, lazy_brokers="broker-lazy-disk" in needs)
        settings = Settings(
            TOPIC,
            cfg.max_records_per_step,
            cfg.retain_steps,
            cfg.compact_every,
            cfg.broken,
            cfg.spark,
            lazy_store="lazy-disk" in needs,
        )
        deployment = test.system.deploy(backend, settings, self.work, logs)
        self.teardown.push(STOP_SERVICES, deployment.stop)
        display.update(phase="starting the system's services")
        deployment.start()
        history.append(
            "harness",
            "info",
            "setup",
            {
                "backend": cfg.backend,
                "system": test.system.name,
                "bootstrap": backend.bootstrap,
                "topic": TOPIC,
                "store": deployment.store,
            },
        )
        fp = FailpointFile(self.work / "fp" / "failpoints")

        def incarnation(n: int) -> Any:
            log = logs / f"pipeline-{n}.log"
            return backend.incarnation(deployment.launch(n), f"pipeline-{n}", log, fp.path)

        supervisor = Supervisor(incarnation, history, fp, test.system.fired_failpoint)
        self.teardown.push("stop the pipeline", supervisor.stop)
        supervisor.start()
        steps = deployment if isinstance(deployment, CapturesSteps) else None
        observer = Observer(
            deployment.uppers,
            history,
            capture=steps.capture if steps is not None else None,
            captures=CaptureWriter(self.run_dir / CAPTURES) if steps is not None else None,
        )
        self.teardown.push("stop the observer", observer.stop)
        observer.start()
        producers = Producers(
            backend.bootstrap,
            TOPIC,
            cfg.workload,
            test.producer_seeds,
            history,
            logs / "producers.log",
        )
        self.teardown.push("stop the producers", producers.stop)
        disks = {**backend.disks(), **deployment.disks()}
        target = RunTarget(
            backend,
            SupervisedNode(supervisor),
            fp,
            disks,
            lambda: min(observer.last.values(), default=0),
            deployment.nodes,
        )
        for n in test.nemeses.values():
            n.setup(target)
        producers.start()
        self._warm_up(supervisor, observer)
        if supervisor.start_error is None:
            self._execute(target, test.nemeses, supervisor, observer)
        else:  # every planned fault says why it did not happen
            why = "no incarnation of the system under test could be started"
            for i, action in enumerate(test.schedule):
                value = {"action": i, "f": action.f, "outcome": "skipped", "why": why}
                history.append("nemesis", "info", "outcome", value)
        display.update(phase="final phase: healing")
        producers.stop()
        for line in heal_all(test.nemeses, target, history):
            display.log(f"healed {line}")
        for n in test.nemeses.values():
            n.teardown(target)
        if supervisor.start_error is None:
            reason = self._catch_up(backend.bootstrap, deployment, supervisor, observer)
        else:  # nothing ran: no fault was injected and nothing can be judged (UNKNOWN)
            reason = self._harness_failure(NEVER_STARTED, supervisor.start_error)
        supervisor.stop()
        observer.stop()
        display.update(phase="dumping the topic and the store")
        write_topic(dump_topic(backend.bootstrap, TOPIC), self.run_dir / TOPIC_FILE)
        try:
            deployment.export(self.run_dir)
        except Exception as exc:  # the store cannot be read: judged UNKNOWN, not a crash
            why = f"the export of the store failed: {type(exc).__name__}: {exc}"
            reason = "; ".join(filter(None, [reason, self._harness_failure(EXPORT_FAILED, why)]))
        record_inputs(history, self.run_dir)
        if (
            cfg.leave_running
        ):  # Kafka and the services outlive the teardown (sealcheck.harness.run.leave)
            last = supervisor.incarnations
            self.kept = Kept.take(self.teardown, backend, deployment, incarnation, last, fp, logs)
        for e in producers.errors:
            display.log(f"producer: {e}")
        return reason

    def _harness_failure(self, f: str, reason: str) -> str:
        """Record why the run cannot be judged (``sealcheck.rundir.history`` makes the verdict
        UNKNOWN
        with this reason) and return it."""
        self.history.append("harness", "info", f, {"reason": reason})
        self.display.log(reason)
        return reason

    def _warm_up(self, sup: Supervisor, obs: Observer, timeout_s: float = 300.0) -> None:
        """Wait until the system has sealed its first step, so faults hit a working system
        (its first Spark query is slow: 45-60 s in a container beside three brokers on two
        cores, over 130 s on a loaded machine); the schedule's clock starts after this. A
        system that seals nothing in ``timeout_s`` still gets its faults, and says so."""
        self.display.update(phase="warm-up: waiting for the first sealed step")
        start = time.monotonic()
        while obs.last.get("data", 0) < 1 and time.monotonic() - start < timeout_s:
            if sup.start_error is not None:
                return
            self._status(time.monotonic() - start, sup, obs)
            time.sleep(0.1)
        took = round(time.monotonic() - start, 2)
        sealed = obs.last.get("data", 0) >= 1
        self.history.append("harness", "info", "warmed-up", {"took_s": took, "sealed": sealed})
        self.display.log(
            f"warm-up: first step sealed after {took}s"
            if sealed
            else f"warm-up: nothing sealed after {took}s; starting the faults anyway"
        )

    def _execute(
        self, target: RunTarget, nemeses: dict[str, Nemesis], sup: Supervisor, obs: Observer
    ) -> None:
        """Run the schedule in real time until ``duration_s``, printing each step.

        Every action's ops carry its index in the schedule (``action``) and its ``outcome``;
        an action left ``pending`` (an armed failpoint) is settled when the next action is
        due and when the fault phase ends, so each planned fault happens or says why not."""
        start = time.monotonic()
        # the schedule's zero on the history's clock (the report draws planned times from it)
        self.history.append("harness", "info", "faults-start", {"duration_s": self.cfg.duration_s})
        pending: list[tuple[int, Action, float]] = []
        todo = list(enumerate(self.test.schedule))
        self.display.update(phase="workload and faults")

        def settle() -> None:
            while pending:
                i, action, at = pending.pop(0)
                waited = time.monotonic() - start - at  # now: an invoke before may have been slow
                try:
                    done = nemeses[action.nemesis].resolve(action, target, waited)
                except Exception as exc:  # recorded; the run goes on
                    done = {"outcome": "failed", "why": f"{type(exc).__name__}: {exc}"}
                self.history.append(
                    "nemesis", "info", "outcome", {"action": i, "f": action.f, **done}
                )
                self.display.log(f"{action.nemesis}: {action.f} #{i} outcome -> {done}")

        while (elapsed := time.monotonic() - start) < self.cfg.duration_s:
            # due actions run back to back when the runner is behind, but not past the end
            while todo and todo[0][1].at_s <= elapsed and not self._over(start):
                settle()  # may wait for a pending fault to have had its chance
                if self._over(start):
                    break
                i, action = todo.pop(0)
                value = {**action.value, "action": i}
                self.history.append("nemesis", "invoke", action.f, value)
                try:
                    done = nemeses[action.nemesis].invoke(action, target)
                    kind = "info"
                except Exception as exc:  # recorded; the run goes on
                    err = f"{type(exc).__name__}: {exc}"
                    done, kind = {"error": err, "outcome": "failed", "why": err}, "fail"
                done.setdefault("outcome", "happened")
                self.history.append("nemesis", kind, action.f, {**value, **done})
                if done["outcome"] == "pending":
                    pending.append((i, action, time.monotonic() - start))
                line = f"{action.nemesis}: {action.f} {action.value or ''} -> {done}"
                self.display.log(line)
                self.display.update(last_action=line)
            self._status(elapsed, sup, obs)
            time.sleep(0.1)
        settle()
        for i, action in todo:  # planned inside the fault phase, never reached: say so
            if action.at_s < self.cfg.duration_s:
                why = "the fault phase ended first (the runner was behind its schedule)"
                value = {"action": i, "f": action.f, "outcome": "skipped", "why": why}
                self.history.append("nemesis", "info", "outcome", value)

    def _over(self, start: float) -> bool:
        """Whether the fault phase that began at ``start`` has run its duration."""
        return time.monotonic() - start >= self.cfg.duration_s

    def _status(self, elapsed: float, sup: Supervisor, obs: Observer) -> None:
        counts = self.history.counts
        self.display.update(
            elapsed_s=elapsed,
            writes={t: counts[("write", t)] for t in ("ok", "info", "fail")},
            uppers=dict(obs.last),
            incarnation=sup.incarnations,
        )

    def _catch_up(
        self, bootstrap: str, deployment: Deployment, sup: Supervisor, obs: Observer
    ) -> str:
        """Wait until the store has sealed the log end; the reason if it does not in time."""
        self.display.update(phase="final phase: catching up")
        start = time.monotonic()
        deadline = start + self.cfg.final_timeout_s
        while True:  # a broker healed a moment ago may not lead its partitions yet
            try:
                end = log_end(bootstrap, TOPIC)
                break
            except Exception as exc:
                if time.monotonic() >= deadline:
                    why = f"{type(exc).__name__}: {exc}"
                    return f"could not read the log end from Kafka in time: {why}"
                time.sleep(1.0)
        self.history.append("harness", "info", "log-end", {str(p): o for p, o in end.items()})
        while time.monotonic() < deadline:
            progress = deployment.progress()  # None while the store cannot be read: again
            if progress is not None and progress.covers(end):
                took = round(time.monotonic() - start, 2)
                self.history.append("harness", "info", "caught-up", {"took_s": took})
                self.display.log(f"caught up with the log end {end} in {took}s")
                return ""
            refusing = sup.refusing(self.test.system.refusal_exit_codes, 3)
            if refusing:
                reason = (
                    f"liveness: {self.cfg.system} refuses to resume ({refusing}: its last 3 "
                    f"incarnations exited with a code that says the store cannot be resumed; "
                    f"sealed: {obs.last}, log end {end})"
                )
                break
            self._status(time.monotonic() - start, sup, obs)
            time.sleep(0.25)
        else:
            reason = (
                f"liveness: {self.cfg.system} did not seal the log end {end} within "
                f"{self.cfg.final_timeout_s:.0f}s after healing (sealed: {obs.last})"
            )
        self.history.append("harness", "info", "not-caught-up", {"reason": reason})
        self.display.log(reason)
        return reason
