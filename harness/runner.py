"""One whole test, Jepsen style: set up, run the workload under a planned fault schedule,
heal, let the pipeline catch up, tear down, judge, store.

Phases (each printed and recorded): plan (every seed and the whole schedule, before anything
starts) → Kafka and the topic → pipeline under the supervisor, observer, producers → faults at
their planned times until ``duration_s`` → final phase: stop producing, heal every nemesis,
wait (``final_timeout_s``) until the pipeline has sealed the log end → stop the pipeline,
dump the topic, copy the store, stop Kafka → checkers → ``results.json`` and ``report.html``.
"""

from __future__ import annotations

import random
import shlex
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import cleanup
from harness.config import TestConfig, to_flags
from harness.history import HistoryWriter
from harness.progress import Display
from harness.store import new_run_dir, point_latest, write_json
from nemeses import Action, Nemesis, PlanInfo, describe, plan_schedule
from nemeses.registry import build
from pipeline.failpoints import FAILPOINTS


@dataclass
class Plan:
    """Everything decided from the seed before the run starts."""

    schedule: list[Action]
    schedule_seed: int
    producer_seeds: list[int]


def make_plan(cfg: TestConfig) -> Plan:
    """Derive every seed and the fault schedule from ``cfg.seed`` (same seed, same plan)."""
    rng = random.Random(cfg.seed)
    schedule_seed = rng.getrandbits(63)
    producer_seeds = [rng.getrandbits(63) for _ in range(cfg.workload.concurrency)]
    info = PlanInfo(cfg.brokers, tuple(FAILPOINTS))
    schedule = plan_schedule(
        cfg.nemeses, schedule_seed, cfg.duration_s, cfg.nemesis_interval_s, info
    )
    return Plan(schedule, schedule_seed, producer_seeds)


@dataclass
class Outcome:
    """How a run ended."""

    run_dir: Path
    valid: bool | None
    reason: str
    took_s: float


def _versions() -> dict[str, str]:
    from importlib.metadata import version

    from harness.jars import pom_property

    out = {"python": sys.version.split()[0], "kafka": pom_property("kafka.version")}
    for dist in ("sealcheck", "pyspark", "confluent-kafka", "polars"):
        try:
            out[dist] = version(dist)
        except Exception:
            out[dist] = "?"
    return out


def repro_command(cfg: TestConfig, run_dir: Path) -> list[str]:
    """Commands that repeat this run: every setting of the config as flags (so nothing depends
    on today's defaults), or the saved config and schedule as they are."""
    return [
        "sealcheck run " + shlex.join(to_flags(cfg)),
        f"sealcheck run --replay {shlex.quote(str(run_dir))}",
    ]


class _Teardown:
    """Runs cleanup steps in reverse order; keeps going past errors, honours Ctrl-C."""

    def __init__(self, display: Display) -> None:
        self.steps: list[tuple[str, Any]] = []
        self.display = display

    def push(self, what: str, fn: Any) -> None:
        self.steps.append((what, fn))

    def run(self) -> None:
        while self.steps:
            what, fn = self.steps.pop()
            try:
                fn()
            except Exception as exc:  # teardown goes on; Ctrl-C (BaseException) does not
                self.display.log(f"warning: {what}: {type(exc).__name__}: {exc}")


def run_test(
    cfg: TestConfig,
    display: Display,
    schedule: list[Action] | None = None,
) -> Outcome:
    """Run ``cfg`` (with ``schedule`` instead of the planned one when replaying)."""
    started = time.monotonic()
    gone = [*(str(p.pid) for p in cleanup.cleanup()), *cleanup.cleanup_containers()]
    if gone:
        display.log(f"cleaned up {len(gone)} processes/containers left by runs whose harness died")
    plan = make_plan(cfg)
    if schedule is not None:
        plan.schedule = schedule
    store = Path(cfg.store_dir)
    run_dir = new_run_dir(store, cfg.name)
    point_latest(store, run_dir)
    meta: dict[str, Any] = {
        "config": cfg.to_json(),
        "schedule_seed": plan.schedule_seed,
        "producer_seeds": plan.producer_seeds,
        "schedule": [a.to_json() for a in plan.schedule],
        "versions": _versions(),
        "reproduce": repro_command(cfg, run_dir),
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    write_json(run_dir / "test.json", meta)
    display.console.print(f"run directory: {run_dir}")
    display.console.print(f"fault schedule (seed {cfg.seed}): {len(plan.schedule)} actions")
    for line in describe(plan.schedule):
        display.console.print("  " + line)
    cleanup.mark_children(run_dir)
    history = HistoryWriter(run_dir / "history.jsonl")
    teardown = _Teardown(display)
    teardown.push("close the history", history.close)
    reason = ""
    try:
        from harness.session import Session

        session = Session(cfg, plan, run_dir, history, display, teardown)
        reason = session.run()
    finally:
        teardown.run()
    meta["took_s"] = round(time.monotonic() - started, 1)
    meta["final_phase"] = reason or "caught up"
    write_json(run_dir / "test.json", meta)
    valid = _judge(run_dir, cfg, meta, display)
    point_latest(store, run_dir)
    shutil.rmtree(run_dir / "work", ignore_errors=True)
    return Outcome(run_dir, valid, reason, time.monotonic() - started)


def _judge(run_dir: Path, cfg: TestConfig, meta: dict[str, Any], display: Display) -> bool | None:
    from checkers import check_run
    from harness.report import write_report

    display.update(phase="checking")
    result = check_run(run_dir)
    doc = result.to_json()
    write_json(run_dir / "results.json", doc)
    write_report(run_dir)
    return result.valid


def heal_all(nemeses: dict[str, Nemesis], target: Any, history: HistoryWriter) -> list[str]:
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


def nemeses_for(cfg: TestConfig, schedule: list[Action]) -> dict[str, Nemesis]:
    """The nemesis instances a schedule needs (those configured plus any it names)."""
    names = list(dict.fromkeys([*cfg.nemeses, *(a.nemesis for a in schedule)]))
    return build(names, PlanInfo(cfg.brokers, tuple(FAILPOINTS)))
