"""Every sealed step judged: captures fill in what compaction merged (sealcheck.checkers.steps).

Compaction merges a store's oldest steps; a wrong step that healed before it is invisible in
the export alone. The harness captures each step right after it is sealed; these tests show the
checkers judge every step through the captures, say so when a step could not be captured, and
catch a captured step that the store holds otherwise at the end.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import polars as pl
import pytest

from sealcheck.checkers import run_checkers
from sealcheck.checkers.inputs import RunData
from sealcheck.checkers.steps import merge
from sealcheck.rundir.captures import Capture, CaptureWriter, plan, read
from sealcheck.systems.upsert_source.store import read_capture
from tests.runs import build_run, compacted

PAIRS = [(b"k%d" % (i % 7), b"{bad" if i % 11 == 0 else b'{"i": %d}' % i) for i in range(90)]


def _with_captures(run: RunData, full: RunData, captured_below: int | None = None) -> RunData:
    """``run`` (an export) judged with captures of ``full``'s steps (all, or those below)."""
    upper = max(full.uppers.values())
    hi = upper if captured_below is None else captured_below
    rows = full.updates.filter(pl.col("ts") < hi)
    ranges = {c: [(0, min(hi, full.uppers[c]))] for c in full.uppers}
    updates, sinces, steps = merge(run.updates.lazy(), run.uppers, run.sinces, {}, rows, ranges)
    return RunData(run.topic, updates, run.uppers, sinces, run.history, steps=steps)


@pytest.mark.parametrize("spread", [(), (b"k1", b"k2")], ids=["merged-at-one-time", "spread"])
def test_a_compacted_export_is_judged_step_by_step_through_the_captures(
    spread: tuple[bytes, ...],
) -> None:
    """Also when the merged updates sit at several times below ``since`` (keys an earlier
    compaction merged and nothing changed since keep theirs where they were)."""
    full = build_run(PAIRS, step_size=6)
    since = 8
    export = compacted(full, since, ["bindings", "data", "errors"], spread)
    if spread:
        assert export.updates.filter(pl.col("ts") == since - 2).height > 0
    alone = run_checkers(export)
    assert alone.valid is None  # steps 0-8 only merged: not every sealed step was judged
    res = run_checkers(_with_captures(export, full))
    assert res.valid is True, {n: (r.anomaly_counts, r.error) for n, r in res.checkers.items()}
    counts = res.checkers["sealed_state"].counts
    assert counts["data_steps_judged"] == counts["data_steps_sealed"] == full.uppers["data"]


def test_a_wrong_step_that_healed_before_compaction_is_caught_through_the_captures() -> None:
    full = build_run(PAIRS, step_size=6)
    # step 2 of data inserts a wrong value for one key, step 3 retracts it again: the final
    # state is right, and compaction to 8 merges the two away
    wrong = pl.DataFrame(
        [("data", b"k1", b'{"wrong": 1}', 2, 1), ("data", b"k1", b'{"wrong": 1}', 3, -1)],
        schema=full.updates.schema,
        orient="row",
    )
    bad = RunData(
        full.topic, pl.concat([full.updates, wrong]), full.uppers, full.sinces, full.history
    )
    export = compacted(bad, 8, ["bindings", "data", "errors"])
    assert not run_checkers(export).checkers["sealed_state"].anomaly_counts  # invisible
    res = run_checkers(_with_captures(export, bad))
    state = res.checkers["sealed_state"]
    assert res.valid is False
    assert state.anomaly_counts == {"state-mismatch": 2}
    assert [a.step for a in state.anomalies] == [2, 3]


def test_a_step_compacted_before_it_was_captured_is_unknown_naming_the_steps() -> None:
    full = build_run(PAIRS, step_size=6)
    export = compacted(full, 8, ["bindings", "data", "errors"])
    res = run_checkers(_with_captures(export, full, captured_below=5))  # 5-8 missed
    state = res.checkers["sealed_state"]
    assert res.valid is None and state.valid is None
    error = str(state.error)
    assert "(data 6/15; errors 6/15 judged/sealed)" in error
    assert "data steps 0-8" in error and "merged by compaction before the harness" in error


def test_a_sealed_step_that_changed_after_its_capture_is_an_anomaly() -> None:
    full = build_run(PAIRS, step_size=6)
    export = compacted(full, 8, ["bindings", "data", "errors"])
    # the store lost an update of step 10 (above since) and one merged into step 8
    late = export.updates.filter(pl.col("collection") == "data")
    gone10 = late.filter(pl.col("ts") == 10).row(0)
    gone8 = late.filter(pl.col("ts") == 8).row(0)
    keep = ~(
        pl.struct(pl.all()).is_in(
            [
                dict(zip(late.columns, gone10, strict=True)),
                dict(zip(late.columns, gone8, strict=True)),
            ]
        )
    )
    lossy = RunData(
        export.topic, export.updates.filter(keep), export.uppers, export.sinces, export.history
    )
    res = run_checkers(_with_captures(lossy, full))
    state = res.checkers["sealed_state"]
    assert res.valid is False
    changed = [a for a in state.anomalies if a.kind == "sealed-step-changed"]
    assert sorted(a.step for a in changed) == [8, 10]
    assert "merged into step 8" in next(a.detail for a in changed if a.step == 8)


@pytest.mark.parametrize(
    ("captured", "sinces", "ranges", "missed"),
    [
        ({}, {"data": 0}, {"data": (0, 5)}, {}),  # never compacted: everything
        ({"data": 3}, {"data": 0}, {"data": (3, 5)}, {}),
        ({"data": 3}, {"data": 2}, {"data": (3, 5)}, {}),  # merged only what was captured
        ({"data": 2}, {"data": 3}, {"data": (4, 5)}, {"data": (2, 4)}),  # 2-3 merged first
        ({"data": 5}, {"data": 3}, {}, {}),  # nothing new
    ],
)
def test_plan_reads_only_steps_compaction_has_not_merged(
    captured: dict[str, int],
    sinces: dict[str, int],
    ranges: dict[str, tuple[int, int]],
    missed: dict[str, tuple[int, int]],
) -> None:
    assert plan(captured, {"data": 5}, sinces) == (ranges, missed)


def test_captures_round_trip_and_a_sqlite_store_is_captured_read_only(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    con = sqlite3.connect(db)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("CREATE TABLE updates(collection TEXT, key BLOB, val BLOB, ts INT, diff INT)")
    con.execute("CREATE TABLE frontiers(collection TEXT PRIMARY KEY, upper INT, since INT)")
    con.executemany(
        "INSERT INTO updates VALUES (?, ?, ?, ?, ?)",
        [
            ("data", b"a", b"1", 0, 1),
            ("data", b"a", b"1", 1, -1),
            ("data", b"a", b"2", 1, 1),
            ("data", b"b", b"3", 2, 1),
        ],
    )
    con.executemany("INSERT INTO frontiers VALUES (?, ?, ?)", [("data", 2, 0)])
    con.commit()
    first = read_capture(str(db), {})
    assert first is not None and first.ranges == {"data": (0, 2)} and len(first.rows) == 3
    con.execute("UPDATE frontiers SET upper = 3")
    con.commit()
    second = read_capture(str(db), {"data": 2})
    assert second is not None and second.rows == [("data", b"b", b"3", 2, 1)]
    writer = CaptureWriter(tmp_path / "captures.arrows")
    for c in (first, second, Capture({"data": (3, 3)})):
        writer.write(c)
    writer.close()
    table = read((tmp_path / "captures.arrows").read_bytes())
    assert table.num_rows == 4 and table.column("ts").to_pylist() == [0, 1, 1, 2]
    assert read_capture(str(tmp_path / "absent.db"), {}) is None


def test_the_observer_stops_once_and_nothing_follows_the_final_op(tmp_path: Path) -> None:
    from sealcheck.harness.run.observer import Observer
    from sealcheck.rundir.history_writer import HistoryWriter

    captures = CaptureWriter(tmp_path / "captures.arrows")
    history = HistoryWriter(tmp_path / "history.jsonl")
    uppers = {"data": 1}

    def capture(since: dict[str, int]) -> Capture:
        lo = since.get("data", 0)
        return Capture({"data": (lo, uppers["data"])}, {}, [("data", b"k", b"v", lo, 1)])

    observer = Observer(
        lambda: dict(uppers), history, heartbeat_s=0.0, capture=capture, captures=captures
    )
    observer.sample()
    observer.stop()
    lines = (tmp_path / "history.jsonl").read_text().count("\n")
    uppers["data"] = 2  # teardown stops it again after the final op: nothing may be written
    observer.stop()
    assert (tmp_path / "history.jsonl").read_text().count("\n") == lines
    assert read((tmp_path / "captures.arrows").read_bytes()).num_rows == 1
    with pytest.raises(ValueError, match="is closed"):
        captures.write(capture({}))


def test_steps_compaction_merged_before_a_capture_are_named() -> None:
    full = build_run(PAIRS, step_size=6)
    export = compacted(full, 8, ["bindings", "data", "errors"])
    run = _with_captures(export, full, captured_below=5)
    run.steps.missed = {"data": [(5, 9)]}
    error = str(run_checkers(run).checkers["sealed_state"].error)
    assert "compacted before they could be captured: data 5-8" in error
