"""An output that holds a row without a key (:class:`sealcheck.systems.api.Unjudgeable`): said
in one line at the first read that meets it, turned by the observer into the run's halt, the
states seen before it exported and judged — INVALID when they show a violation, else UNKNOWN
with that line — and shown in the report."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from sealcheck.checkers import run_checkers
from sealcheck.checkers.inputs import RunData
from sealcheck.harness.run.halt import RunHalt
from sealcheck.harness.run.observer import Observer
from sealcheck.report.halted import halted, how_it_ended
from sealcheck.rundir.history import History
from sealcheck.rundir.history_writer import HistoryWriter
from sealcheck.systems.api import Unjudgeable
from sealcheck.systems.outputs import SQLiteOutput
from tests.runs import build_run


def _db(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE accounts (id TEXT PRIMARY KEY, balance INTEGER)")
    db.execute("CREATE TABLE dead (id TEXT PRIMARY KEY, why TEXT)")
    db.commit()
    return db


def _null_key_line(db: Path) -> str:
    return (
        f"{db}: table accounts holds a row whose key column id is NULL (balance=7): a row "
        "without a key cannot be judged. If the job should not store records without a key, "
        "that is a bug in the job; otherwise make the job and effect() send such records to a "
        "dead letter (DeadLetter) or SKIP them"
    )


def test_a_null_key_is_one_line_at_the_first_read_and_at_every_read_after(
    tmp_path: Path,
) -> None:
    path = tmp_path / "out.db"
    db = _db(path)
    out = SQLiteOutput(path, "accounts", "id", errors="dead")
    db.execute("INSERT INTO accounts VALUES ('k1', 1)")
    db.commit()
    assert out.uppers() == {"data": 1, "errors": 1}
    db.execute("INSERT INTO accounts VALUES (NULL, 7)")  # SQLite allows it in a TEXT key
    db.commit()
    for _ in range(2):
        with pytest.raises(Unjudgeable) as raised:
            out.uppers()
        assert str(raised.value) == _null_key_line(path)
    with pytest.raises(Unjudgeable):
        out.progress()  # the final phase's look says the same
    with pytest.raises(Unjudgeable) as raised:
        out.export(tmp_path / "run")  # the states before it are written first
    assert str(raised.value) == _null_key_line(path)
    frontiers = json.loads((tmp_path / "run" / "export" / "frontiers.json").read_text())
    assert frontiers["data"] == {"upper": 1, "since": 0}
    rows = pl.read_parquet(tmp_path / "run" / "export" / "updates.parquet")
    assert rows.select("collection", "key", "ts", "diff").rows() == [("data", b"k1", 0, 1)]


def test_a_dead_letter_without_a_key_says_to_give_dead_letters_one(tmp_path: Path) -> None:
    path = tmp_path / "out.db"
    db = _db(path)
    db.execute("INSERT INTO dead VALUES (NULL, 'not JSON')")
    db.commit()
    with pytest.raises(Unjudgeable) as raised:
        SQLiteOutput(path, "accounts", "id", errors="dead").uppers()
    assert str(raised.value) == (
        f"{path}: table dead holds a dead letter whose key column id is NULL (why='not JSON'): "
        "a row without a key cannot be judged. If the job should not store records without a "
        "key, that is a bug in the job; otherwise give every dead letter a key (say, the "
        "record's partition:offset)"
    )


def test_the_observer_halts_the_run_once_with_the_line(tmp_path: Path) -> None:
    path = tmp_path / "out.db"
    db = _db(path)
    out = SQLiteOutput(path, "accounts", "id")
    history = HistoryWriter(tmp_path / "history.jsonl")
    said: list[str] = []
    halt = RunHalt(history, said.append)
    observer = Observer(out.uppers, history, halt=halt)
    db.execute("INSERT INTO accounts VALUES ('k1', 1)")
    db.commit()
    assert observer.sample() == {"data": 1, "errors": 1} and observer.advances == 1
    db.execute("INSERT INTO accounts VALUES (NULL, 7)")
    db.commit()
    assert observer.sample() is None and observer.sample() is None
    history.close()
    ops = History.load(tmp_path / "history.jsonl").ops
    [op] = [o for o in ops if o["f"] == "halted"]
    assert op["process"] == "harness"
    assert op["value"] == {"reason": _null_key_line(path), "by": "observer"}
    assert said == [f"halted: {_null_key_line(path)}"]
    assert [o["value"] for o in ops if o["f"] == "uppers"] == [{"data": 1, "errors": 1}]


def _halted_op(index: int, reason: str, **more: Any) -> dict[str, Any]:
    value = {"reason": reason, **more}
    return {"index": index, "time": 1, "process": "harness", "type": "info", "f": "halted",
            "value": value}  # fmt: skip


PAIRS = [(b"a", b'{"v": 1}'), (b"b", b'{"v": 1}'), (b"a", b'{"v": 2}'), (b"d", b'{"v": 1}')]


def _with_halt(run: RunData, why: str) -> RunData:
    """``run`` as a halted run would record it: a ``halted`` op before the final ones."""
    ops = run.history.ops
    ops.insert(len(ops) - 3, _halted_op(0, why))
    for i, op in enumerate(ops):
        op["index"] = i
    return run


def test_a_halted_run_is_unknown_with_the_line_or_invalid_beside_it() -> None:
    why = "out.db: table accounts holds a row whose key column id is NULL"
    res = run_checkers(_with_halt(build_run(PAIRS, partitions=1, step_size=2), why))
    assert res.valid is None
    assert res.input_problems == [f"the run was halted: {why}"]
    assert all(c.valid is not False for c in res.checkers.values())
    run = _with_halt(build_run(PAIRS, partitions=1, step_size=2), why)
    wrong = run.updates.filter(~((pl.col("key") == b"a") & (pl.col("collection") == "data")))
    bad = RunData(run.topic, wrong, run.uppers, run.sinces, run.history)
    res = run_checkers(bad)
    assert res.valid is False  # a violation seen before the halt is INVALID ...
    assert res.input_problems == [f"the run was halted: {why}"]  # ... with the halt beside it


def test_the_report_shows_the_halt_and_the_failing_incarnations_log() -> None:
    exit_op = {
        "f": "sut-exit",
        "process": "supervisor",
        "value": {
            "incarnation": 2,
            "code": 1,
            "by_itself": True,
            "lived_s": 0.3,
            "error": "ValueError: boom",
            "log_tail": "Traceback …\nValueError: boom",
        },
    }
    ops = [exit_op, _halted_op(1, "the job exits by itself", by="supervisor", incarnation=2)]
    assert halted(ops) == {
        "reason": "the job exits by itself",
        "incarnation": 2,
        "tail": "Traceback …\nValueError: boom",
    }
    assert halted([exit_op]) is None
    assert how_it_ended(exit_op["value"]) == (  # type: ignore[arg-type]
        "by itself after 0.3 s (code 1), no fault explains it: ValueError: boom"
    )
    assert how_it_ended({"code": -9, "signal": "SIGKILL"}) == ""
