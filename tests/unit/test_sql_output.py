"""A job's output in SQLite tables without bindings (:mod:`sealcheck.systems.outputs.sql`):
the harness's snapshots become states, the export has no bindings, the checkers that need
them are not applicable, and ``prefix`` judges the states — never VALID unseen."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest

from sealcheck.checkers import run_checkers
from sealcheck.checkers.inputs import RunData
from sealcheck.systems.api import Progress, Unjudgeable
from sealcheck.systems.outputs import SQLiteOutput
from sealcheck.systems.outputs.sql import OutputError
from tests.runs import build_run

DDL = "CREATE TABLE t (id TEXT PRIMARY KEY, v INTEGER, at TEXT)"


def _db(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path)
    db.execute(DDL)
    db.execute("CREATE TABLE bad (id TEXT PRIMARY KEY, why TEXT)")
    db.commit()
    return db


def test_each_committed_change_is_one_state_of_updates(tmp_path):
    db = _db(tmp_path / "x.db")
    out = SQLiteOutput(tmp_path / "x.db", "t", "id", "bad", exclude=("at",))
    assert out.uppers() == {"data": 0, "errors": 0}  # empty tables: no state yet
    db.executemany("INSERT INTO t VALUES (?, ?, 'now')", [("a", 1), ("b", 1)])
    db.commit()
    assert out.uppers() == {"data": 1, "errors": 1}
    assert out.uppers() == {"data": 1, "errors": 1}  # nothing committed: no snapshot
    db.execute("UPDATE t SET v = 2, at = 'later' WHERE id = 'a'")
    db.execute("INSERT INTO bad VALUES ('0:7', 'no key')")
    db.commit()
    db.execute("UPDATE t SET at = 'later still'")  # only an excluded column: the same state
    db.commit()
    assert out.uppers() == {"data": 2, "errors": 2}
    first = out.capture({})
    assert first is not None and first.ranges == {"data": (0, 2), "errors": (0, 2)}
    assert sorted(first.rows) == [
        ("data", b"a", b'{"v":1}', 0, 1),
        ("data", b"a", b'{"v":1}', 1, -1),
        ("data", b"a", b'{"v":2}', 1, 1),
        ("data", b"b", b'{"v":1}', 0, 1),
        ("errors", b"0:7", b'{"why":"no key"}', 1, 1),
    ]
    assert out.capture({"data": 2, "errors": 2}) is None  # nothing new
    out.export(tmp_path / "run")
    frontiers = json.loads((tmp_path / "run" / "export" / "frontiers.json").read_text())
    assert frontiers == {
        "data": {"upper": 2, "since": 0},
        "errors": {"upper": 2, "since": 0},
        "bindings": {"upper": 0, "since": 0, "kept": False},
    }
    exported = pq.read_table(tmp_path / "run" / "export" / "updates.parquet").to_pylist()
    assert len(exported) == 5


def test_tables_not_there_yet_are_not_an_output_yet(tmp_path):
    out = SQLiteOutput(tmp_path / "none.db", "t", "id")
    assert out.uppers() is None and out.progress() is None
    sqlite3.connect(tmp_path / "none.db").close()  # the file, but not the table yet
    assert out.uppers() is None


def test_the_job_settles_only_after_a_quiet_spell_with_it_running():
    p = Progress({"data": 3, "errors": 3}, {}, settle_s=20.0, changed_at=100.0)
    assert not p.covers({0: 10})  # nothing shows the log end was read
    assert not p.settled(now=110.0, started_at=50.0)
    assert p.settled(now=120.0, started_at=50.0)
    # restarted after its last change: three spells of quiet, as a slow start may not read yet
    assert not p.settled(now=160.0, started_at=101.0)
    assert p.settled(now=161.0, started_at=101.0)
    assert not Progress({"data": 3}, {0: 10}).settled(now=1e9, started_at=0.0)


def test_a_quiet_spell_before_the_heal_does_not_count():
    # the output last changed at 100 and the broker came back at 130 (the heal): quiet from
    # 130 on, not from 100 — a job cut off from Kafka changes nothing, caught up or not
    p = Progress({"data": 3, "errors": 3}, {}, settle_s=20.0, changed_at=100.0)
    assert p.settled(now=131.0, started_at=50.0)  # without the heal
    assert not p.settled(now=131.0, started_at=50.0, healed_at=130.0)
    assert p.settled(now=150.0, started_at=50.0, healed_at=130.0)
    # restarted after its last change, healed later still: three spells from the heal
    assert not p.settled(now=180.0, started_at=101.0, healed_at=130.0)
    assert p.settled(now=190.0, started_at=101.0, healed_at=130.0)


def _without_bindings(run: RunData, caught_up: bool = True) -> RunData:
    """``run`` as an output without bindings exports it (and, if not ``caught_up``, without
    the harness's caught-up op)."""
    updates = run.updates.filter(pl.col("collection") != "bindings")
    uppers = {c: u for c, u in run.uppers.items() if c != "bindings"}
    history = run.history
    for op in history.ops:  # the observer never saw bindings either
        if op.get("f") == "uppers":
            op["value"] = {c: u for c, u in op["value"].items() if c != "bindings"}
    if not caught_up:
        history.ops = [op for op in history.ops if op.get("f") != "caught-up"]
    return RunData(
        run.topic,
        updates,
        uppers,
        dict.fromkeys(uppers, 0),
        history,
        unkept=frozenset({"bindings"}),
    )


PAIRS = [(b"a", b'{"v": 1}'), (b"b", b'{"v": 1}'), (b"a", b'{"v": 2}'), (b"c", b"{bad")]
PAIRS += [(b"d", b'{"v": 1}'), (b"b", None)]


def test_without_bindings_only_the_checkers_that_need_them_stand_aside():
    res = run_checkers(_without_bindings(build_run(PAIRS, partitions=1, step_size=2)))
    assert set(res.not_applicable) >= {"bindings", "frontiers", "sealed_state"}
    assert "the output keeps no bindings" in res.checkers["sealed_state"].error
    assert res.checkers["prefix"].valid is True
    assert res.checkers["completeness"].valid is True
    assert res.valid is True, {n: r.word() for n, r in res.checkers.items()}


def test_without_bindings_an_unsettled_run_is_never_valid():
    run = _without_bindings(build_run(PAIRS, partitions=1, step_size=2), caught_up=False)
    res = run_checkers(run, ["prefix", "completeness"])
    assert res.checkers["prefix"].valid is None
    assert "never settled" in res.checkers["prefix"].error
    assert res.checkers["completeness"].valid is None
    assert res.valid is None


def test_without_bindings_a_state_no_prefix_explains_is_still_caught():
    run = _without_bindings(build_run(PAIRS, partitions=1, step_size=2))
    # a=2 (offset 2) is lost while the dead letter of c (offset 3) is in: no prefix explains both
    lost = (pl.col("key") == b"a") & (pl.col("ts") == 1)
    res = run_checkers(RunData(run.topic, run.updates.filter(~lost), run.uppers, run.sinces,
                               run.history, unkept=run.unkept), ["prefix"])  # fmt: skip
    assert res.checkers["prefix"].valid is False


def test_a_batch_in_flight_keeps_the_job_from_settling(tmp_path):
    from sealcheck.core.windows import streaming_windows
    from sealcheck.systems.job_checkpoint import in_flight, newest_write

    [window] = streaming_windows("checkpoint").values()
    assert not in_flight(tmp_path, window)  # no checkpoint yet
    for d in ("offsets", "commits"):
        (tmp_path / "checkpoint" / d).mkdir(parents=True)
    for n in (8, 9, 10):
        (tmp_path / "checkpoint" / "offsets" / str(n)).touch()
    for n in (8, 9):
        (tmp_path / "checkpoint" / "commits" / str(n)).touch()
    assert in_flight(tmp_path, window)  # offsets/10 without commits/10 (10 sorts after 9)
    (tmp_path / "checkpoint" / "commits" / "10").touch()
    assert not in_flight(tmp_path, window)
    assert newest_write(tmp_path) >= (tmp_path / "checkpoint" / "commits" / "10").stat().st_mtime


def test_a_missing_bindings_collection_is_not_taken_for_an_output_without_bindings():
    run = build_run(PAIRS, partitions=1, step_size=2)
    gone = RunData(run.topic, run.updates.filter(pl.col("collection") != "bindings"),
                   {c: u for c, u in run.uppers.items() if c != "bindings"}, run.sinces,
                   run.history)  # fmt: skip
    res = run_checkers(gone, ["sealed_state", "frontiers"])
    assert "sealed_state" not in res.not_applicable and res.valid is not True


def test_a_final_read_that_fails_fails_the_export(tmp_path):
    db = _db(tmp_path / "x.db")
    out = SQLiteOutput(tmp_path / "x.db", "t", "id")
    db.execute("INSERT INTO t VALUES ('a', 1, 'now')")
    db.commit()
    assert out.uppers() == {"data": 1, "errors": 1}
    db.execute("ALTER TABLE t RENAME TO gone")
    db.commit()
    with pytest.raises(OutputError, match="cannot be read"):
        out.export(tmp_path / "run")
    assert not (tmp_path / "run" / "export" / "frontiers.json").exists()


def test_a_key_column_that_is_not_there_is_one_line_at_the_first_read(tmp_path):
    db = _db(tmp_path / "x.db")
    out = SQLiteOutput(tmp_path / "x.db", "t", "no_such_column")
    db.execute("INSERT INTO t VALUES ('a', 1, 'now')")
    db.commit()
    line = (
        f"{tmp_path / 'x.db'}: table t has no column no_such_column (its columns: id, v, at): "
        "give the output the table's key column(s) as key= (and its value column as value=)"
    )
    with pytest.raises(Unjudgeable) as raised:  # the observer turns it into a halt
        out.uppers()
    assert str(raised.value) == line
    with pytest.raises(Unjudgeable, match="has no column no_such_column"):
        out.export(tmp_path / "run")


def test_a_job_of_several_transactions_per_batch_is_seen_only_between_batches(tmp_path):
    from sealcheck.core.windows import streaming_windows
    from sealcheck.systems.job_checkpoint import batch_boundary

    windows = tuple(streaming_windows("checkpoint").values())
    cp = tmp_path / "checkpoint"
    for d in ("offsets", "commits"):
        (cp / d).mkdir(parents=True)
    db = _db(tmp_path / "x.db")
    out = SQLiteOutput(tmp_path / "x.db", "t", "id", "bad", between_batches=True)
    out.watch_batches(lambda: batch_boundary(tmp_path, windows))
    assert batch_boundary(tmp_path, windows) == ""  # no batch yet
    (cp / "offsets" / "0").touch()  # batch 0 planned: in flight
    assert batch_boundary(tmp_path, windows) is None
    db.execute("INSERT INTO t VALUES ('a', 1, 'now')")  # its first transaction
    db.commit()
    assert out.uppers() is None  # the half-written batch is no state of the job's
    db.execute("INSERT INTO bad VALUES ('0:1', 'no key')")  # its second
    db.commit()
    (cp / "commits" / "0").touch()  # batch 0 done
    assert batch_boundary(tmp_path, windows) == "0"
    assert out.uppers() == {"data": 1, "errors": 1}  # one state: both transactions
    (cp / "offsets" / "1").touch()
    db.execute("UPDATE t SET v = 2 WHERE id = 'a'")
    db.commit()
    assert out.uppers() == {"data": 1, "errors": 1}
    with pytest.raises(OutputError, match="a batch was in flight at the end"):
        out.export(tmp_path / "run")
    (cp / "commits" / "1").touch()
    assert out.uppers() == {"data": 2, "errors": 2}
    out.export(tmp_path / "run2")


def test_the_harness_reads_postgres_with_the_connection_strings_own_options():
    from sealcheck.systems.outputs.postgres import read_options

    dsn = "postgresql://u@h:5432/db?options=-csearch_path%3Drun_1"
    assert read_options(dsn) == "-csearch_path=run_1 -c statement_timeout=5000"
    assert read_options("host=h dbname=db") == "-c statement_timeout=5000"
