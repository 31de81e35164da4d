"""Never valid on incomplete or stale input; explanations that point at the right step.

Each test is one case that used to be judged wrongly: a history cut short or deleted, a
garbage line, a stale export, a store changed after the run, ``errors`` sealed behind ``data``,
bindings moved back, a lost retraction read as a lost insert, a Kafka loss blamed on the
pipeline."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import polars as pl
import pytest

from sealcheck.checkers import check_run, load, run_checkers
from sealcheck.checkers.inputs import RunData
from sealcheck.checkers.replay import binding_ranges
from sealcheck.harness.cli import app as cli
from sealcheck.rundir.history import History, HistoryError
from tests.runs import build_run, compacted, stored_run, with_updates


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    """A run whose every file carries its run id: judged even when its history is cut or
    gone (an old run's are refused then: ``tests/unit/test_run_ids.py``)."""
    return stored_run(tmp_path, run_id="honest")


@pytest.fixture
def lines_run(tmp_path: Path) -> Path:
    """A run stored before ``acks.arrows``: its 400 acknowledgements are lines of the
    history (a crash that cuts both files: ``tests/unit/test_acks.py``)."""
    return stored_run(tmp_path, ack_lines=True, run_id="honest")


def cut(path: Path, keep: float) -> None:
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[: int(len(lines) * keep)]))


def test_a_complete_run_is_valid_and_says_how_much_was_judged(run_dir: Path) -> None:
    res = check_run(run_dir)
    assert res.valid is True, res.to_json()
    doc = res.to_json()
    assert doc["inputs"]["complete"] is True
    acks = doc["inputs"]["acknowledged_writes"]
    assert acks["read"] == acks["written"] == 400
    counts = res.checkers["completeness"].counts
    assert counts["acknowledged_writes_checked"] == counts["acknowledged_writes_written"] == 400
    state = res.checkers["sealed_state"].counts
    assert state["data_steps_judged"] == state["errors_steps_judged"] > 5


@pytest.mark.parametrize("keep", [0.5, 0.44])
def test_a_history_cut_short_is_unknown_not_valid(lines_run: Path, keep: float) -> None:
    run_dir = lines_run
    cut(run_dir / "history.jsonl", keep)
    res = check_run(run_dir)
    assert res.valid is None
    assert "without the harness's final 'inputs' op" in res.input_problems[0]
    completeness = res.checkers["completeness"]
    assert completeness.valid is None
    checked = completeness.counts["acknowledged_writes_checked"]
    assert 0 < checked < 400 and f"checked {checked:,} acknowledged writes" in str(
        completeness.error
    )
    assert cli.main(["check", str(run_dir)]) == cli.EXIT_UNKNOWN


def test_a_deleted_history_is_unknown_with_every_history_checker_saying_why(
    run_dir: Path,
) -> None:
    (run_dir / "history.jsonl").unlink()
    res = check_run(run_dir)
    assert res.valid is None
    assert "does not exist" in res.input_problems[0]
    for name in ("completeness", "frontiers", "seal_monotonic"):
        assert res.checkers[name].valid is None, name
    assert "checked 0 acknowledged writes" in str(res.checkers["completeness"].error)


@pytest.mark.parametrize("garbage", ["not json at all", '{"index": 5, "time": 1, broken'])
def test_a_garbage_line_names_the_file_and_line_for_checkers_and_report(
    lines_run: Path, garbage: str
) -> None:
    run_dir = lines_run
    path = run_dir / "history.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    lines[5] = garbage + "\n"
    path.write_text("".join(lines))
    with pytest.raises(HistoryError, match=r"history\.jsonl line 6: "):
        History.load(path)
    res = check_run(run_dir)
    assert res.valid is None
    assert "history.jsonl line 6" in res.input_problems[0]
    from sealcheck.report.report import render

    (run_dir / "results.json").write_text(json.dumps(res.to_json()))
    (run_dir / "test.json").write_text(json.dumps({"config": {"name": "t"}}))
    assert "history.jsonl line 6" in render(run_dir)


def test_a_removed_line_in_the_middle_is_found_by_its_index(lines_run: Path) -> None:
    path = lines_run / "history.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:100] + lines[101:]))
    with pytest.raises(HistoryError, match="line 101: expected op index 100, found 101"):
        History.load(path)


def test_a_torn_line_after_the_final_op_is_a_file_changed_after_the_run(run_dir: Path) -> None:
    with open(run_dir / "history.jsonl", "a") as fh:
        fh.write('{"index": 99999, "ti')  # the harness had finished: not a death mid-write
    res = check_run(run_dir)
    assert res.valid is None
    changed = "20 bytes after the final op: the file changed after the run ended"
    assert changed in res.input_problems[0]
    assert not any("torn last line" in n for n in res.notes)


def test_an_export_that_is_not_the_run_s_is_refused(run_dir: Path, tmp_path: Path) -> None:
    other = stored_run(tmp_path / "other", seed=12)
    shutil.copy(other / "export" / "updates.parquet", run_dir / "export" / "updates.parquet")
    res = check_run(run_dir)
    assert res.valid is None and res.checkers == {}  # nothing judged from a foreign export
    assert "export/updates.parquet is not the file the run produced" in res.input_problems[0]
    assert cli.main(["check", str(run_dir)]) == cli.EXIT_UNKNOWN


def test_an_export_both_changed_and_unreadable_is_refused_not_read(run_dir: Path) -> None:
    # The digests are checked while the inputs are read: a file that differs is refused,
    # whatever reading it would have said.
    (run_dir / "export" / "updates.parquet").write_bytes(b"not parquet")
    res = check_run(run_dir)
    assert res.valid is None and res.checkers == {}
    assert "export/updates.parquet is not the file the run produced" in res.input_problems[0]
    assert "not readable as its format now" in res.input_problems[0]


def test_a_big_file_changed_is_refused_whatever_reading_it_raised(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Big files' digests are taken while the inputs are read: the refusal is what is said,
    # not the error the reading met (here: anything at all).
    def fails(*_: object) -> None:
        raise RuntimeError("the reading blew up")

    monkeypatch.setattr(load, "_BIG", 0)  # every file's digest taken beside the reading
    monkeypatch.setattr(load, "_read", fails)
    with pytest.raises(RuntimeError, match="blew up"):  # files unchanged: the error stands
        load.load_run(run_dir)
    with open(run_dir / "topic.parquet", "ab") as fh:
        fh.write(b"\0")
    run = load.load_run(run_dir)
    assert [r.split(" (")[0] for r in run.refusals] == [
        "topic.parquet is not the file the run produced"
    ]


def test_a_store_copy_changed_after_the_run_is_named(run_dir: Path) -> None:
    # The export and the store copy beside it are recorded together: a store.db that is no
    # longer the one the export was made from is found, not silently ignored.
    db = run_dir / "export" / "store.db"
    with sqlite3.connect(db) as con:
        con.execute("DELETE FROM updates WHERE rowid IN (SELECT rowid FROM updates LIMIT 3)")
    res = check_run(run_dir)
    assert res.valid is None and res.checkers == {}
    assert "export/store.db is not the file the run produced" in res.input_problems[0]
    (run_dir / "topic.parquet").unlink()
    assert check_run(run_dir).valid is None  # missing: unknown, saying which


def test_errors_sealed_behind_data_is_caught_and_counted() -> None:
    run = build_run([(b"k%d" % i, b"{bad" if i % 3 else b"1") for i in range(40)], step_size=5)
    behind = {**run.uppers, "errors": run.uppers["errors"] - 1}
    ops = [  # every observation saw errors one step behind as well
        {**op, "value": {**op["value"], "errors": op["value"]["errors"] - 1}}
        if op.get("f") == "uppers"
        else op
        for op in run.history.ops
    ]
    lagging = RunData(run.topic, run.updates, behind, run.sinces, History(run.history.acked, ops))
    res = run_checkers(lagging)
    front = res.checkers["frontiers"]
    assert front.valid is False and front.anomaly_counts == {"errors-upper-differs": 1}
    counts = res.checkers["sealed_state"].counts
    assert counts["errors_steps_judged"] == counts["data_steps_judged"] - 1
    assert res.valid is False


def test_a_sample_with_bindings_behind_data_is_caught() -> None:
    run = build_run([(b"k%d" % i, b"1") for i in range(30)], step_size=5)
    seen = {"index": 99, "time": 5, "process": "observer", "type": "info", "f": "uppers"}
    ops = [*run.history.ops, {**seen, "value": {"bindings": 2, "data": 3, "errors": 3}}]
    bad = RunData(run.topic, run.updates, run.uppers, run.sinces, History(run.history.acked, ops))
    front = run_checkers(bad).checkers["frontiers"]
    assert front.anomaly_counts == {"bindings-behind-data": 1}
    assert "observed at history index 99" in front.anomalies[0].detail


def test_bindings_moved_back_are_blamed_at_that_step_and_not_before() -> None:
    run = build_run([(b"k%d" % (i % 40), b'{"i": %d}' % i) for i in range(400)], step_size=13)
    assert run.uppers["data"] > 14
    ranges = binding_ranges(run.collection("bindings"), run.uppers["bindings"])
    at10 = ranges.filter((pl.col("ts") == 10) & (pl.col("partition") == 0)).row(0, named=True)
    old, new = str(at10["end"]).encode(), str(at10["start"] - 4).encode()
    moved = run.updates.with_columns(
        pl.when(
            (pl.col("collection") == "bindings")
            & (pl.col("key") == b"0")
            & (pl.col("value") == old)
        )
        .then(pl.lit(new))
        .otherwise(pl.col("value"))
        .alias("value")
    )
    res = run_checkers(with_updates(run, moved))
    back = res.checkers["bindings"]
    assert back.anomaly_counts == {"offset-went-back": 1}
    assert back.anomalies[0].step == 10
    steps = [a.step for r in res.checkers.values() for a in r.anomalies if a.step is not None]
    assert min(steps) == 10, {n: r.anomaly_counts for n, r in res.checkers.items()}


def test_a_lost_insert_and_a_lost_retraction_read_differently() -> None:
    run = build_run([(b"a", b'{"v": 1}'), (b"b", b"{}"), (b"a", b'{"v": 2}')], step_size=1)
    data = pl.col("collection") == "data"
    a2 = data & (pl.col("value") == b'{"v": 2}') & (pl.col("diff") == 1)
    a1_out = data & (pl.col("value") == b'{"v": 1}') & (pl.col("diff") == -1)
    lost_insert = run_checkers(with_updates(run, run.updates.filter(~a2)))
    lost_retraction = run_checkers(with_updates(run, run.updates.filter(~a1_out)))
    one = lost_insert.checkers["sealed_state"].anomalies[0]
    two = lost_retraction.checkers["sealed_state"].anomalies[0]
    assert one.expected["value"] == two.expected["value"] == '{"v": 2}'
    assert one.found["values"] == []
    assert "lost the insert" in one.detail
    assert [v["value"] for v in two.found["values"]] == ['{"v": 1}', '{"v": 2}']
    assert "lost retraction" in two.detail


def test_a_multiplicity_of_minus_one_reads_retracted_more_often_than_added() -> None:
    run = build_run([(b"a", b'{"v": 1}'), (b"a", b'{"v": 2}')], step_size=1)
    retraction = run.updates.filter((pl.col("collection") == "data") & (pl.col("diff") == -1))
    twice = with_updates(run, pl.concat([run.updates, retraction]))
    a = run_checkers(twice).checkers["diff_of_one"].anomalies[0]
    assert a.found == -1 and "retracted more often than added" in a.detail


def test_not_caught_up_never_prints_a_negative_count() -> None:
    run = build_run([(b"k%d" % i, b"1") for i in range(20)], partitions=1, step_size=5)
    last = run.updates.filter(pl.col("collection") == "bindings").sort("ts").row(-1, named=True)
    past = run.updates.with_columns(  # the pipeline bound 3 offsets that were never written
        pl.when(pl.col("value") == last["value"])
        .then(pl.lit(b"23"))
        .otherwise(pl.col("value"))
        .alias("value")
    )
    res = run_checkers(with_updates(run, past))
    completeness = res.checkers["completeness"]
    assert "not-caught-up" not in completeness.anomaly_counts
    assert completeness.valid is None and "bound past" in str(completeness.error)
    assert res.checkers["bindings"].anomaly_counts == {"bound-past-log-end": 1}


def test_a_write_kafka_lost_is_not_blamed_on_the_pipeline() -> None:
    run = build_run([(b"k%d" % (i % 5), b'{"i": %d}' % i) for i in range(30)], step_size=4)
    # Kafka loses an acknowledged record after the pipeline read it: the topic dump lacks it.
    gone = run.topic.filter(pl.col("partition") == 0).sort("offset").row(3, named=True)
    topic = run.topic.filter(~((pl.col("partition") == 0) & (pl.col("offset") == gone["offset"])))
    res = run_checkers(RunData(topic, run.updates, run.uppers, run.sinces, run.history))
    assert res.valid is False
    assert res.checkers["completeness"].anomaly_counts == {"kafka-lost-write": 1}
    for name in ("sealed_state", "no_phantoms", "diff_of_one", "unique_key", "bindings"):
        kinds = res.checkers[name].anomaly_counts
        assert not kinds, (name, kinds)  # nothing blamed on the pipeline
    explained = res.checkers["sealed_state"].counts.get("differences_explained_by_kafka", 0)
    assert explained + res.checkers["no_phantoms"].counts.get("explained_by_kafka", 0) > 0


def test_a_kill_between_the_compactions_of_two_collections_is_not_a_mismatch() -> None:
    # Found by the soak (seed 13): compaction is one transaction per collection, and a kill
    # landed after ``bindings`` was compacted to since 5 and before ``data`` and ``errors``
    # were. The store is consistent; the model must be compared at the coarser resolution.
    pairs = [(b"k%d" % (i % 7), b"{bad" if i % 11 == 0 else b'{"i": %d}' % i) for i in range(90)]
    run = build_run(pairs, step_size=6)
    since = 5
    half = compacted(run, since, ["bindings"])
    res = run_checkers(half)
    assert not any(r.anomaly_counts for r in res.checkers.values())
    # the merged steps were not judged one by one: never VALID, and it says which
    state = res.checkers["sealed_state"]
    assert res.valid is None and state.valid is None
    assert "bindings steps 0-5 were merged by compaction" in str(state.error)
    assert state.counts["data_steps_judged"] == run.uppers["data"] - since - 1


@pytest.mark.parametrize(
    ("f", "reason"),
    [
        ("never-started", "incarnation 0 of the system under test could not be started"),
        ("export-failed", "the export of the store failed: UndefinedTable: no frontiers"),
    ],
)
def test_a_run_the_harness_could_not_drive_is_unknown_saying_why(
    run_dir: Path, f: str, reason: str
) -> None:
    path = run_dir / "history.jsonl"
    *ops, final = [json.loads(line) for line in path.read_text().splitlines()]
    op = {"index": final["index"], "time": final["time"], "process": "harness", "type": "info"}
    ops += [{**op, "f": f, "value": {"reason": reason}}, {**final, "index": final["index"] + 1}]
    path.write_text("".join(json.dumps(o) + "\n" for o in ops))
    res = check_run(run_dir)
    assert res.valid is None
    assert res.input_problems == [f"{reason}: the system's output cannot be judged"]
    assert cli.main(["check", str(run_dir)]) == cli.EXIT_UNKNOWN
    # with the export missing too, the cause comes first, then the missing file
    (run_dir / "export" / "updates.parquet").unlink()
    first, missing = check_run(run_dir).input_problems
    assert first.startswith(reason) and "updates.parquet is missing" in missing
