"""Upgrades under faults (issue 53): a job that declares two versions runs the first, and the
``upgrade`` nemesis stops it (SIGTERM or SIGKILL, seeded) and starts the second on the same
directory, topic and output. A correct second version is VALID, with the version of every
incarnation in the history; a second version that starts from the log's end instead of its
stored offsets (a new checkpoint and ``startingOffsets=latest``) is INVALID; a second version
that adds a column is judged on it by the version that wrote each row, and caught when it
writes it only on insert. Real Kafka, the
tiny SQLite job (:mod:`tests.integration.tiny_sqlite_job`); declaring a crash window, it is
killed inside it for the upgrade."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from sealcheck import CrashWindow, Delete, JobRun, Record, SQLiteOutput, Upsert
from sealcheck.rundir.coverage import outcomes
from tests.integration.tiny_jobs import NO_KEYLESS, RUN, Tiny

pytestmark = pytest.mark.integration


@dataclass(frozen=True)
class TwoVersions(Tiny):
    """The tiny SQLite job in two versions; ``v2-from-latest``: v2 starts at the log's end."""

    name = "tiny-two-versions"
    versions = ("v1", "v2")
    broken_modes = {"v2-from-latest": "v2 ignores the stored offsets and reads from the end"}  # noqa: RUF012

    def command(self, run: JobRun) -> list[str]:
        wrong = run.version == "v2" and run.broken == "v2-from-latest"
        return super().command(run) + (["--from-latest"] if wrong else [])


@dataclass(frozen=True)
class WithAWindow(TwoVersions):
    """The same, with a crash window: just after a batch's commit (told by its log line)."""

    name = "tiny-two-versions-window"
    windows = {"after-commit": CrashWindow(r"batch (\d+) committed", what="after a commit")}  # noqa: RUF012


@dataclass(frozen=True)
class ANewColumn(TwoVersions):
    """The same, whose v2 adds a column, ``size`` (the value's length): each version's rows
    stated by ``effect(record, version)``; ``v2-size-on-insert``: v2 writes ``size`` when it
    inserts a row, not when it updates one."""

    name = "tiny-a-new-column"
    broken_modes = {"v2-size-on-insert": "v2 sets size on insert, not on update"}  # noqa: RUF012

    def command(self, run: JobRun) -> list[str]:
        flag = "--size-on-insert" if run.broken == "v2-size-on-insert" else "--size"
        return super().command(run) + ([flag] if run.version == "v2" else [])

    def output(self, run: JobRun) -> SQLiteOutput:
        return SQLiteOutput(run.dir / "out.db", "accounts", "id", settle_s=10)

    def effect(self, record: Record, version: str = "v1") -> Upsert | Delete:
        key = (record.key or b"").decode("utf-8", "replace")
        if record.value is None:
            return Delete(key)
        text = record.value.decode("utf-8", "replace")
        return Upsert(key, {"v": text, **({"size": len(text)} if version == "v2" else {})})


def _ops(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "history.jsonl").open()]


def _values(ops: list[dict[str, Any]], f: str) -> list[dict[str, Any]]:
    return [o["value"] for o in ops if o["f"] == f and o["type"] == "info"]


def test_a_correct_second_version_resumes_the_first(sealcheck: Any) -> None:
    result = sealcheck(TwoVersions(), nemeses=["upgrade"], **RUN, **NO_KEYLESS)
    result.assert_valid()
    ops = _ops(result.run_dir)
    [upgrade] = [o for o in ops if o["f"] == "upgrade" and o["type"] == "info"]
    value = upgrade["value"]
    assert (value["from"], value["to"], value["was_running"]) == ("v1", "v2", "v1")
    assert value["outcome"] == "happened" and value["effect"]["effect"] is True, value
    versions = {
        o["value"]["incarnation"]: o["value"]["version"] for o in ops if o["f"] == "version"
    }
    starts = [o for o in ops if o["f"] == "sut-start"]
    assert versions[0] == "v1" and versions[max(versions)] == "v2"
    assert set(versions) == {o["value"]["incarnation"] for o in starts}  # every incarnation
    # the upgrade stopped v1's incarnation; the one after it runs v2
    running = next(
        o["value"]["incarnation"] for o in starts if o["value"]["pid"] == value["running"]
    )
    assert versions[running] == "v2" and versions[running - 1] == "v1"


def test_a_second_version_that_starts_from_the_end_is_caught(sealcheck: Any) -> None:
    result = sealcheck(
        TwoVersions(), broken="v2-from-latest", nemeses=["upgrade"], **RUN, **NO_KEYLESS
    )
    result.assert_invalid()
    assert {"prefix", "completeness"} & set(result.failing_checkers), result.failing_checkers


def test_a_new_column_is_judged_by_the_version_that_wrote_each_row(sealcheck: Any) -> None:
    result = sealcheck(ANewColumn(), nemeses=["upgrade"], **RUN, **NO_KEYLESS)
    result.assert_valid()
    judged = json.loads((result.run_dir / "results.json").read_text())["checkers"]["versions"]
    assert judged["valid"] is True and judged["counts"]["keys_after_cut"] > 0, judged


def test_a_new_column_written_on_insert_only_is_caught(sealcheck: Any) -> None:
    result = sealcheck(
        ANewColumn(), broken="v2-size-on-insert", nemeses=["upgrade"], **RUN, **NO_KEYLESS
    )
    result.assert_invalid("versions")
    assert result.failing_checkers == ("versions",), result.failing_checkers  # the rest is right
    first = next(a for a in result.anomalies if a.checker == "versions")  # the earliest
    said = r"only v2 \(incarnation \d+\) may have written it then|v2 wrote it"
    assert re.search(said, first.detail) and '{"size":null}' in first.detail, first


def test_an_upgrade_at_a_crash_window_kills_the_first_version_there(sealcheck: Any) -> None:
    # seed 10 plans the upgrade as a kill inside `after-commit` (one opening let pass)
    result = sealcheck(WithAWindow(), seed=10, nemeses=["upgrade"], **RUN, **NO_KEYLESS)
    result.assert_valid()
    ops = _ops(result.run_dir)
    [upgrade] = outcomes(ops).values()  # pending until the window opened, then settled
    assert (upgrade["signal"], upgrade["window"], upgrade["outcome"]) == (
        "window", "after-commit", "happened"), upgrade  # fmt: skip
    said = upgrade["effect"]["evidence"]
    assert upgrade["effect"]["effect"] is True and "(v1) killed " in said, said
    assert "before the window closed (after-commit)" in said, said
    assert f"{upgrade['running']} runs v2" in said and upgrade["opened_by"].startswith("batch ")
    exits = _values(ops, "sut-exit")
    assert [e["code"] for e in exits if e["pid"] == upgrade["stopped"]] == [-9]  # SIGKILLed


def test_a_rollback_runs_the_first_version_again_on_what_the_second_wrote(sealcheck: Any) -> None:
    # two windows: the upgrade to v2, then the rollback to v1 (on v2's offsets and rows)
    run = {**RUN, "duration": 18}
    result = sealcheck(TwoVersions(), nemeses=["rollback"], **run, **NO_KEYLESS)
    result.assert_valid()
    ops = _ops(result.run_dir)
    changes = [(v["from"], v["to"], v["outcome"]) for v in outcomes(ops).values()]
    assert changes == [("v1", "v2", "happened"), ("v2", "v1", "happened")], changes
    ran = [o["value"]["version"] for o in ops if o["f"] == "version"]
    assert ran[0] == "v1" and "v2" in ran and ran[-1] == "v1", ran
