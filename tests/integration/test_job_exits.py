"""A user's job that cannot be judged as it runs is told so in one line, soon, and the run
ends UNKNOWN (exit 2) with nothing left running — on real Kafka, through ``sealcheck run``
(the pytest plugin's ``sealcheck`` fixture runs it as a child process):

* a job whose command exits at once (``true``): halted after three exits by itself in a row,
  the line says the command exits at once;
* a job that fails on its own (a Python exception at start): the line is its exception;
* a job that stores a record without a key under a NULL key in SQLite: the line names the table
  and the key column and says what to do.

Each run is short; the assertions are on the history's ops and the printed lines. The one on
time is a generous upper bound documenting the promise ("told within 30 s of the cause"),
never a measure of speed.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from sealcheck import SKIP, Delete, Job, JobRun, Record, SQLiteOutput, Upsert
from sealcheck.core.effects import Effects
from sealcheck.infra import cleanup

pytestmark = pytest.mark.integration

JOB = Path(__file__).with_name("tiny_sqlite_job.py")
#: short runs: the halt comes long before the fault phase would end
RUN: dict[str, Any] = {"duration": 20, "interval": 5, "keys": 50, "rate": 50}
#: the promise: told within this many seconds of the cause (a bound, not a measure)
PROMISE_S = 30.0


@dataclass(frozen=True)
class ExitsAtOnce(Job):
    """A job whose command is ``true``: it exits at once, code 0, printing nothing."""

    name = "exits-at-once"

    def command(self, run: JobRun) -> list[str]:
        return ["true"]

    def output(self, run: JobRun) -> SQLiteOutput:
        return SQLiteOutput(run.dir / "out.db", "accounts", "id", value="v")


@dataclass(frozen=True)
class FailsAtStart(ExitsAtOnce):
    """A job that raises at start, every time (a traceback, exit 1)."""

    name = "fails-at-start"

    def command(self, run: JobRun) -> list[str]:
        code = "raise ValueError('batch 0 holds two records of key k7')"
        return [sys.executable, "-c", code]


@dataclass(frozen=True)
class StoresNullKeys(ExitsAtOnce):
    """The tiny SQLite job (:mod:`tests.integration.tiny_sqlite_job`): correct for keyed
    records, but it stores a record without a key under a NULL key where its mapping says
    to skip it."""

    name = "stores-null-keys"

    def command(self, run: JobRun) -> list[str]:
        return [sys.executable, str(JOB), run.bootstrap, run.topic, str(run.dir / "out.db")]

    def effect(self, record: Record) -> Effects:
        if record.key is None:
            return SKIP
        key = record.key.decode("utf-8", "replace")
        if record.value is None:
            return Delete(key)
        return Upsert(key, record.value.decode("utf-8", "replace"))


@dataclass(frozen=True)
class WrongThenStuck(StoresNullKeys):
    """The tiny SQLite job storing values upper-cased (states no prefix explains) that fails
    once it has stored 150 records, and at every start after that."""

    name = "wrong-then-stuck"

    def command(self, run: JobRun) -> list[str]:
        return [*super().command(run), "--upper", "--fail-after", "150"]


def _ops(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "history.jsonl").open()]


def _halt(ops: list[dict[str, Any]]) -> dict[str, Any]:
    [halted] = [o for o in ops if o["process"] == "harness" and o["f"] == "halted"]
    return halted


def _first_start_s(ops: list[dict[str, Any]]) -> float:
    return next(o["time"] for o in ops if o["f"] == "sut-start") / 1e9


def _nothing_left(run_dir: Path) -> None:
    assert not [p for p in cleanup.leftovers() if p.run == str(run_dir)]
    assert not [p for p in cleanup.tagged() if p.run == str(run_dir)]


def test_a_command_that_exits_at_once_is_told_and_the_run_halts(sealcheck: Any) -> None:
    result = sealcheck(ExitsAtOnce(), nemeses=["kill"], **RUN)
    assert result.verdict == "UNKNOWN" and result.exit_code == 2, result.summary()
    ops = _ops(result.run_dir)
    halted = _halt(ops)["value"]
    reason = halted["reason"]
    assert reason.startswith("the job's command exits at once by itself: 3 incarnations in a row")
    assert reason.endswith("it printed nothing (its log: logs/sut-2.log)")
    exits = [o["value"] for o in ops if o["f"] == "sut-exit"]
    assert len(exits) == 3 and all(e["by_itself"] and e["code"] == 0 for e in exits)
    assert [o["value"]["incarnation"] for o in ops if o["f"] == "sut-start"] == [0, 1, 2]
    lines = result.output.splitlines()
    verdict = [line for line in lines if line.startswith("verdict: ")]
    assert len(verdict) == 1 and verdict[0].endswith(f"; the run was halted: {reason}")
    assert sum("exited by itself after" in line for line in lines) == 3
    assert "Traceback" not in result.output
    assert result.problems[0] == f"the run was halted: {reason}"
    skipped = [o["value"] for o in ops if o["f"] == "outcome"]
    assert skipped and all(v["outcome"] == "skipped" for v in skipped)
    assert not any(o["f"] == "caught-up" for o in ops)
    # the promise, as a generous bound: halted within 30 s of the first start (it takes ~4 s)
    assert _halt(ops)["time"] / 1e9 - _first_start_s(ops) < PROMISE_S
    report = result.report.read_text()
    assert 'id="halted"' in report and "exits at once by itself" in report
    _nothing_left(result.run_dir)


def test_a_job_that_fails_on_its_own_is_told_with_its_exception(sealcheck: Any) -> None:
    result = sealcheck(FailsAtStart(), nemeses=["kill"], **RUN)
    assert result.verdict == "UNKNOWN" and result.exit_code == 2, result.summary()
    ops = _ops(result.run_dir)
    reason = _halt(ops)["value"]["reason"]
    error = "ValueError: batch 0 holds two records of key k7"
    assert reason.endswith(f"(code 1), nothing sealed: {error} (its log: logs/sut-2.log)")
    exits = [o["value"] for o in ops if o["f"] == "sut-exit"]
    assert [e["error"] for e in exits] == [error] * 3
    assert all("Traceback (most recent call last):" in e["log_tail"] for e in exits)
    said = [line for line in result.output.splitlines() if "exited by itself" in line]
    assert len(said) == 3 and all(line.endswith(f"no fault explains it: {error}") for line in said)
    report = result.report.read_text()
    assert 'id="halted-log"' in report and "Traceback (most recent call last):" in report
    _nothing_left(result.run_dir)


def test_a_null_key_in_the_output_is_told_in_one_line(sealcheck: Any) -> None:
    # 2% of the records have no key (a third of the bad ones): the first within seconds
    result = sealcheck(StoresNullKeys(), nemeses=["kill"], **RUN, **{"workload.bad_ratio": 0.06})
    assert result.verdict == "UNKNOWN" and result.exit_code == 2, result.summary()
    ops = _ops(result.run_dir)
    halted = _halt(ops)["value"]
    db = (result.run_dir / "work" / "job" / "out.db").resolve()
    reason = halted["reason"]
    assert reason.startswith(f"{db}: table accounts holds a row whose key column id is NULL (v=")
    assert reason.endswith(
        "): a row without a key cannot be judged. If the job should not store records without "
        "a key, that is a bug in the job; otherwise make the job and effect() send such records "
        "to a dead letter (DeadLetter) or SKIP them"
    )
    assert halted["by"] in ("observer", "final phase", "export")
    verdict = [line for line in result.output.splitlines() if line.startswith("verdict: ")]
    assert len(verdict) == 1 and verdict[0].endswith(f"; the run was halted: {reason}")
    assert result.problems[0] == f"the run was halted: {reason}"
    assert "Traceback" not in result.output
    assert not [o for o in ops if o["f"] == "export-failed"]  # the states before are judged
    # the promise, as a generous bound: told within 30 s of the job's first start
    assert _halt(ops)["time"] / 1e9 - _first_start_s(ops) < PROMISE_S
    _nothing_left(result.run_dir)


def test_a_violation_seen_before_the_job_got_stuck_is_invalid_with_the_halt_beside_it(
    sealcheck: Any,
) -> None:
    run = {**RUN, "duration": 10, "workload.bad_ratio": 0.0}
    result = sealcheck(WrongThenStuck(), nemeses=["kill"], **run)
    assert result.verdict == "INVALID" and result.exit_code == 1, result.summary()
    assert "prefix" in result.failing_checkers
    ops = _ops(result.run_dir)
    reason = _halt(ops)["value"]["reason"]
    error = "RuntimeError: poison: the job cannot go past"
    assert error in reason and reason.endswith(".log)")
    assert result.problems[0] == f"the run was halted: {reason}"  # beside the violation
    verdict = [line for line in result.output.splitlines() if line.startswith("verdict: ")]
    assert len(verdict) == 1 and verdict[0].startswith("verdict: INVALID")
    assert verdict[0].endswith(f"; the run was halted: {reason}")
    exits = [o["value"] for o in ops if o["f"] == "sut-exit" and o["value"].get("by_itself")]
    assert exits and all(error in e["error"] for e in exits)
    _nothing_left(result.run_dir)
