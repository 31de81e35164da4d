"""One whole test, Jepsen style: set up, run the workload under a planned fault schedule,
heal, let the system under test catch up, tear down, judge, store — and with
``--leave-running``, leave Kafka, the store and a last incarnation running
(:mod:`sealcheck.harness.run.leave`).

Phases (each printed and recorded): plan (the :class:`~sealcheck.harness.run.test.Test` is built:
every
seed and the whole schedule, before anything starts) → Kafka and the topic → incarnations
under the supervisor, observer, producers → faults at their planned times until
``duration_s`` → final phase: stop producing, heal every nemesis, wait (``final_timeout_s``)
until the system has sealed the log end → stop it, dump the topic, export its store, stop
Kafka → checkers → ``results.json`` and ``report.html``.
"""

from __future__ import annotations

import json
import shlex
import shutil
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from sealcheck.core.roles import role_to_json
from sealcheck.harness.run.config import TestConfig
from sealcheck.harness.run.flags import to_flags
from sealcheck.harness.run.progress import Display
from sealcheck.harness.run.session import Session, Teardown
from sealcheck.harness.run.test import Test
from sealcheck.harness.run.validate import NOT_HELD, unheld_boundaries
from sealcheck.infra import cleanup, procs
from sealcheck.infra.left_running import LEFT_RUNNING, LeftRunning
from sealcheck.infra.sweep import left_alone_line, removed_line, sweep
from sealcheck.nemeses import describe
from sealcheck.nemeses.registry import marks
from sealcheck.nemeses.schedule import UNPLANNED, unplanned
from sealcheck.rundir.archive import new_run_dir, point_latest, write_json
from sealcheck.rundir.history_writer import HistoryWriter
from sealcheck.rundir.judged import VERDICT_WORDS
from sealcheck.rundir.marks import MARKS, Mark, marks_to_json, stored_marks
from sealcheck.rundir.runid import RUN_OP, TEST_KEY, new_run_id


@dataclass
class Outcome:
    """How a run ended: :attr:`verdict` (``VALID``, ``INVALID`` or ``UNKNOWN``), where it is
    stored, why the final phase ended and how long it took."""

    run_dir: Path
    #: True, False or None (unknown), as ``results.json`` says it: :attr:`verdict` in a word
    valid: bool | None
    reason: str
    took_s: float
    left: LeftRunning | None = None  # what --leave-running left, and how to reach it
    #: why the run was halted early, in one line (None: it was not; :mod:`.halt`)
    halted: str | None = None

    @property
    def verdict(self) -> str:
        """``VALID``, ``INVALID`` or ``UNKNOWN`` (the word ``ChaosResult.verdict`` uses)."""
        return VERDICT_WORDS[self.valid]


def _versions() -> dict[str, str]:
    from importlib.metadata import version

    from sealcheck.infra.jars import pom_property

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
    return ["sealcheck run " + shlex.join(to_flags(cfg)), replay_command(run_dir)]


def replay_command(run_dir: Path) -> str:
    """The command that repeats the run stored in ``run_dir`` as it was (its saved config and
    schedule)."""
    return f"sealcheck run --replay {shlex.quote(str(run_dir))}"


def run_meta(test: Test, run_dir: Path) -> dict[str, Any]:
    """What ``test.json`` says of a run when it starts: its config, seeds and schedule, the
    windows coverage is measured against, the run's roles (:func:`sealcheck.core.roles.
    stored_roles`) and how the report draws each fault action (:mod:`sealcheck.rundir.marks`:
    readers need not rebuild the run), versions, how to reproduce it and when it started."""
    cfg = test.spec
    return {
        "config": cfg.to_json(),
        "schedule_seed": test.schedule_seed,
        "producer_seeds": test.producer_seeds,
        "schedule": [a.to_json() for a in test.schedule],
        "windows": dict(test.system.failpoints),  # what window coverage is measured against
        "roles": [role_to_json(r) for r in test.plan_info.roles.values()],
        # how the report draws each fault action (so it need not build a nemesis)
        MARKS: marks_to_json(marks(test.plan_info.roles)),
        "versions": _versions(),
        "reproduce": repro_command(cfg, run_dir),
        UNPLANNED: unplanned(cfg.nemeses, test.schedule, cfg.duration_s, cfg.nemesis_interval_s),
        NOT_HELD: unheld_boundaries(cfg.backend, test.system),
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def marks_of(run_dir: Path) -> Mapping[str, Mark]:
    """How the report draws the fault actions of a stored run: the marks its ``test.json``
    keeps, or, for a run stored before marks were kept, those its nemeses give for its stored
    roles (the built-in roles when it has none)."""
    from sealcheck.core.roles import stored_roles
    from sealcheck.rundir.regular import read_text

    try:
        meta = json.loads(read_text(run_dir / "test.json", run_dir))
    except (OSError, ValueError):
        meta = {}
    meta = meta if isinstance(meta, dict) else {}
    return stored_marks(meta.get(MARKS)) or marks(stored_roles(meta.get("roles")))


def run_test(test: Test, display: Display | None = None) -> Outcome:
    """Run ``test``: every phase, then judge and store it. Refuses (:class:`ConfigError`) a test
    whose parts do not fit together before anything starts, however the test was built.
    Quiet unless given a ``display`` (what ``sealcheck run`` prints through)."""
    if display is None:
        with Display(enabled=False, console=Console(quiet=True), live=False) as quiet:
            return run_test(test, quiet)
    test.validate()
    cfg = test.spec
    started = time.monotonic()
    archive = Path(cfg.runs_dir)
    swept = sweep(archive)  # what runs of this archive left (not other archives')
    for line in (removed_line(swept), left_alone_line(swept)):
        if line is not None:
            display.log(line)
    run_dir = new_run_dir(archive, cfg.name)
    point_latest(archive, run_dir)
    run_id = new_run_id(run_dir)  # stamped into every input as it is written (test.json's)
    meta = {**run_meta(test, run_dir), TEST_KEY: run_id}
    write_json(run_dir / "test.json", meta)
    display.console.print(f"run directory: {run_dir}")
    display.console.print(f"fault schedule (seed {cfg.seed}): {len(test.schedule)} actions")
    for line in describe(test.schedule):
        display.console.print("  " + line)
    for missing in (UNPLANNED, NOT_HELD):  # never played: said before the run and after it
        if meta.get(missing):
            display.console.print(f"warning: {meta[missing]}")
    procs.mark_children(run_dir, detached=cfg.leave_running)
    history = HistoryWriter(run_dir / "history.jsonl")
    display.clock = lambda: history.now_ns() / 1e9  # the report's time base from here on
    history.append("harness", "info", RUN_OP, {"id": run_id})  # op 0: whose history this is
    teardown = Teardown(display)
    teardown.push("close the history", history.close)
    session = Session(test, run_dir, history, display, teardown)
    left = None
    try:
        try:
            reason = session.run()
        finally:
            teardown.run()
        meta["took_s"] = round(time.monotonic() - started, 1)
        halted = session.halt.reason
        meta["final_phase"] = f"halted: {halted}" if halted else reason or "caught up"
        write_json(run_dir / "test.json", meta)
        valid = _judge(run_dir, test, display)
        _print_coverage(run_dir, meta, test, display)
        point_latest(archive, run_dir)
        if session.kept is not None:
            left = session.kept.leave(run_dir, test.system.name, session.topic)
        else:
            shutil.rmtree(run_dir / "work", ignore_errors=True)
    finally:
        if cfg.leave_running and left is None:  # an error or Ctrl-C: leave nothing behind
            if session.kept is not None:
                session.kept.stop()
            cleanup.end_owned()  # detached children do not die with the harness
            (run_dir / LEFT_RUNNING).unlink(missing_ok=True)
    return Outcome(run_dir, valid, reason, time.monotonic() - started, left, session.halt.reason)


def _print_coverage(run_dir: Path, meta: dict[str, Any], test: Test, display: Display) -> None:
    """The coverage the judge wrote into ``results.json``, in the lines printed after the
    verdict."""
    from sealcheck.rundir.coverage import COVERAGE, from_json, summary
    from sealcheck.rundir.regular import read_text

    points = dict(test.system.failpoints) if "failpoint" in test.nemeses else {}
    for missing in (UNPLANNED, NOT_HELD):
        if meta.get(missing):
            display.console.print(f"window coverage: {meta[missing]}")
    if not test.schedule:
        return
    try:
        windows = from_json(json.loads(read_text(run_dir / "results.json", run_dir)).get(COVERAGE))
    except (OSError, ValueError, AttributeError):
        windows = None
    if windows is None:
        display.console.print("window coverage: unknown (the history could not be read)")
        return
    for line in summary(windows, points):  # reached: only with evidence of the effect
        display.console.print(line)


def results_doc(run_dir: Path, doc: dict[str, Any]) -> dict[str, Any]:
    """The checkers' ``results.json`` document with the run's fault coverage, computed as the
    run is judged (:func:`sealcheck.nemeses.coverage.judged`): what the report renders."""
    from sealcheck.nemeses.coverage import judged
    from sealcheck.rundir.coverage import COVERAGE, to_json

    windows = judged(run_dir)
    return doc if windows is None else {**doc, COVERAGE: to_json(windows)}


def _judge(run_dir: Path, test: Test, display: Display) -> bool | None:
    import polars as pl

    from sealcheck.checkers import check_run
    from sealcheck.checkers.result import verdict_text
    from sealcheck.report.report import write_report
    from sealcheck.rundir.archive import write_plain_report

    display.update(phase="checking")
    result = check_run(run_dir, list(test.checkers) or None)
    write_json(run_dir / "results.json", results_doc(run_dir, result.to_json()))
    try:
        write_report(run_dir)
    except (OSError, ValueError, pl.exceptions.PolarsError) as exc:  # inputs it cannot draw
        word = verdict_text(result.valid).upper()
        why = f"the full report could not be drawn ({type(exc).__name__}: {exc})"
        write_plain_report(run_dir, word, [why])
    return result.valid
