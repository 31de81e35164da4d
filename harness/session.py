"""The live part of a run on the local backend: Kafka, the supervised pipeline, the observer,
the producers, the fault schedule, the final phase and the dumps the checkers need.

Runs in the harness's main thread (it outlives every process it spawns). Every resource is
registered with the run's teardown as soon as it exists, so a failure anywhere still stops
everything.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.history import HistoryWriter, record_inputs
from harness.observer import Observer
from harness.pipeline_proc import progress
from harness.producers import Producers
from harness.progress import Display
from harness.supervisor import Supervisor
from harness.topic import dump_topic, log_end, write_parquet

if TYPE_CHECKING:
    from harness.config import TestConfig
    from harness.runner import Plan, _Teardown
    from nemeses import Action

TOPIC = "upserts"


class Session:
    """One run's processes and threads, from Kafka start to the topic dump."""

    def __init__(
        self,
        cfg: TestConfig,
        plan: Plan,
        run_dir: Path,
        history: HistoryWriter,
        display: Display,
        teardown: _Teardown,
    ) -> None:
        self.cfg, self.plan, self.run_dir = cfg, plan, run_dir
        self.history, self.display, self.teardown = history, display, teardown
        self.work = run_dir / "work"

    def _backend(self) -> Any:
        if self.cfg.backend == "containers":
            from harness.containers.backend import ContainersBackend

            return ContainersBackend(self.cfg.brokers, self.work, self.run_dir)
        from harness.local_target import LocalBackend

        return LocalBackend(self.cfg.brokers, self.work, self.run_dir)

    def _pipeline_args(self) -> list[str]:
        cfg = self.cfg
        args = ["--retain-steps", str(cfg.retain_steps), "--compact-every", str(cfg.compact_every)]
        return [*args, "--broken", cfg.broken] if cfg.broken else args

    def run(self) -> str:
        """Run everything; return why the final phase failed ("" when it caught up)."""
        from harness.runner import heal_all, nemeses_for

        cfg, display, history = self.cfg, self.display, self.history
        self.work.mkdir(parents=True, exist_ok=True)
        display.update(phase=f"starting Kafka ({cfg.backend})", duration_s=cfg.duration_s)
        backend = self._backend()
        self.teardown.push("stop Kafka and the store", backend.stop)
        backend.start(TOPIC, cfg.partitions)
        bootstrap = backend.bootstrap
        history.append(
            "harness",
            "info",
            "setup",
            {"backend": cfg.backend, "bootstrap": bootstrap, "topic": TOPIC},
        )
        fp_file = self.work / "fp" / "failpoints"
        fp_file.parent.mkdir(parents=True, exist_ok=True)
        make = backend.incarnations(TOPIC, self._pipeline_args(), cfg.max_records_per_step, fp_file)
        supervisor = Supervisor(make, history, fp_file, on_start=backend.on_start)
        self.teardown.push("stop the pipeline", supervisor.stop)
        supervisor.start()
        observer = Observer(lambda: str(backend.store), history)
        self.teardown.push("stop the observer", observer.stop)
        observer.start()
        producers = Producers(
            bootstrap,
            TOPIC,
            cfg.workload,
            self.plan.producer_seeds,
            history,
            self.run_dir / "logs" / "producers.log",
        )
        self.teardown.push("stop the producers", producers.stop)
        target = backend.target(supervisor)
        nemeses = nemeses_for(cfg, self.plan.schedule)
        for n in nemeses.values():
            n.setup(target)
        producers.start()
        self._warm_up(supervisor, observer)
        self._execute(target, nemeses, supervisor, observer)
        display.update(phase="final phase: healing")
        producers.stop()
        for line in heal_all(nemeses, target, history):
            display.log(f"healed {line}")
        for n in nemeses.values():
            n.teardown(target)
        reason = self._catch_up(bootstrap, lambda: str(backend.store), supervisor, observer)
        supervisor.stop()
        observer.stop()
        display.update(phase="dumping the topic and the store")
        write_parquet(dump_topic(bootstrap, TOPIC), self.run_dir / "topic.parquet")
        backend.export_store()
        record_inputs(history, self.run_dir)
        for e in producers.errors:
            display.log(f"producer: {e}")
        return reason

    def _warm_up(self, sup: Supervisor, obs: Observer, timeout_s: float = 120.0) -> None:
        """Wait until the pipeline has sealed its first step, so faults hit a working
        pipeline (its first Spark query is slow); the schedule's clock starts after this."""
        self.display.update(phase="warm-up: waiting for the first sealed step")
        start = time.monotonic()
        while obs.last.get("data", 0) < 1 and time.monotonic() - start < timeout_s:
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
        self, target: Any, nemeses: dict[str, Any], sup: Supervisor, obs: Observer
    ) -> None:
        """Run the schedule in real time until ``duration_s``, printing each step.

        Every action's ops carry its index in the schedule (``action``) and its ``outcome``;
        an action left ``pending`` (an armed failpoint) is settled when the next action is
        due and when the fault phase ends, so each planned fault happens or says why not."""
        start = time.monotonic()
        pending: list[tuple[int, Action, float]] = []
        todo = list(enumerate(self.plan.schedule))
        self.display.update(phase="workload and faults")

        def settle(elapsed: float) -> None:
            while pending:
                i, action, at = pending.pop(0)
                try:
                    done = nemeses[action.nemesis].resolve(action, target, elapsed - at)
                except Exception as exc:  # recorded; the run goes on
                    done = {"outcome": "failed", "why": f"{type(exc).__name__}: {exc}"}
                self.history.append(
                    "nemesis", "info", "outcome", {"action": i, "f": action.f, **done}
                )
                self.display.log(f"{action.nemesis}: {action.f} #{i} outcome -> {done}")

        while (elapsed := time.monotonic() - start) < self.cfg.duration_s:
            while todo and todo[0][1].at_s <= elapsed:
                i, action = todo.pop(0)
                settle(elapsed)
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
        settle(time.monotonic() - start)

    def _status(self, elapsed: float, sup: Supervisor, obs: Observer) -> None:
        counts = self.history.counts
        self.display.update(
            elapsed_s=elapsed,
            writes={t: counts[("write", t)] for t in ("ok", "info", "fail")},
            uppers=dict(obs.last),
            incarnation=sup.incarnations,
        )

    def _catch_up(
        self, bootstrap: str, store_at: Callable[[], str], sup: Supervisor, obs: Observer
    ) -> str:
        """Wait until the store has sealed the log end; the reason if it does not in time."""
        self.display.update(phase="final phase: catching up")
        start = time.monotonic()
        deadline = start + self.cfg.final_timeout_s
        try:
            end = log_end(bootstrap, TOPIC)
        except Exception as exc:
            return f"could not read the log end from Kafka: {type(exc).__name__}: {exc}"
        self.history.append("harness", "info", "log-end", {str(p): o for p, o in end.items()})
        while time.monotonic() < deadline:
            store = store_at()
            if "://" in store or Path(store).exists():
                try:
                    if progress(store).covers(end):
                        took = round(time.monotonic() - start, 2)
                        self.history.append("harness", "info", "caught-up", {"took_s": took})
                        self.display.log(f"caught up with the log end {end} in {took}s")
                        return ""
                except Exception as exc:  # the store may be mid-creation: try again
                    self.display.log(f"waiting for the store: {type(exc).__name__}: {exc}")
            self._status(time.monotonic() - start, sup, obs)
            time.sleep(0.25)
        reason = (
            f"liveness: the pipeline did not seal the log end {end} within "
            f"{self.cfg.final_timeout_s:.0f}s after healing (sealed: {obs.last})"
        )
        self.history.append("harness", "info", "not-caught-up", {"reason": reason})
        self.display.log(reason)
        return reason
