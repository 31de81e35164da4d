"""Each checker on a clean run (valid) and on a run with one seeded violation of its kind,
reported with the right collection, key and step."""

from __future__ import annotations

import json
import threading

import polars as pl
import pytest

from sealcheck.checkers import CHECKERS, run_checkers
from sealcheck.checkers.inputs import RunData
from sealcheck.checkers.result import show
from sealcheck.rundir.history import History
from tests.runs import build_run, with_updates

PAIRS = [
    (b"a", b'{"v": 1}'),
    (b"b", b'{"v": 1}'),
    (b"a", b'{"v": 2}'),
    (None, b"1"),
    (b"c", b"{bad"),
    (b"b", None),
    (b"\xff", b"1"),
    (b"c", b'{"v": 3}'),
    (b"d", b'{"v": 4}'),
    (b"a", b'{"v": 5}'),
    (b"e", b'{"v": 6}'),
    (b"d", None),
] * 3


@pytest.fixture
def run() -> RunData:
    return build_run(PAIRS, partitions=2, step_size=5)


def results(run: RunData) -> dict[str, object]:
    return {n: r.valid if r.applicable else r.word() for n, r in run_checkers(run).checkers.items()}


def test_clean_run_is_valid_for_every_checker(run: RunData) -> None:
    assert run.uppers["data"] == 8  # the built run offers no snapshots: as_of has nothing
    assert results(run) == {
        **dict.fromkeys(CHECKERS, True),
        "as_of": "not applicable",
        "versions": "not applicable",
    }


def first(run: RunData, collection: str, diff: int) -> dict[str, object]:
    frame = run.updates.filter((pl.col("collection") == collection) & (pl.col("diff") == diff))
    return frame.sort("ts", "key").row(2, named=True)


def test_duplicated_insert_breaks_diff_of_one_at_its_step(run: RunData) -> None:
    row = first(run, "data", 1)
    dup = pl.concat([run.updates, pl.DataFrame([row], schema=run.updates.schema)])
    res = run_checkers(with_updates(run, dup)).checkers
    assert res["diff_of_one"].valid is False
    a = res["diff_of_one"].anomalies[0]
    assert (a.collection, a.key, a.step, a.found) == ("data", row["key"].decode(), row["ts"], 2)
    assert res["sealed_state"].valid is False


def test_second_value_without_retraction_breaks_unique_key(run: RunData) -> None:
    row = first(run, "data", 1)
    extra = {**row, "value": b'{"zombie": true}'}
    res = run_checkers(
        with_updates(
            run, pl.concat([run.updates, pl.DataFrame([extra], schema=run.updates.schema)])
        )
    ).checkers
    assert res["unique_key"].valid is False
    a = res["unique_key"].anomalies[0]
    assert (a.collection, a.key, a.step) == ("data", row["key"].decode(), row["ts"])
    assert '{"zombie": true}' in a.found
    assert res["no_phantoms"].valid is False
    assert res["no_phantoms"].anomalies[0].found == '{"zombie": true}'


def test_dropped_retraction_is_a_state_mismatch_at_its_step(run: RunData) -> None:
    row = first(run, "data", -1)
    kept = run.updates.filter(
        ~(
            (pl.col("collection") == "data")
            & (pl.col("key") == row["key"])
            & (pl.col("ts") == row["ts"])
            & (pl.col("diff") == -1)
        )
    )
    res = run_checkers(with_updates(run, kept)).checkers
    assert res["sealed_state"].valid is False
    a = res["sealed_state"].anomalies[0]
    assert (a.collection, a.key, a.step) == ("data", row["key"].decode(), row["ts"])
    assert a.expected["updates"] == [{"value": row["value"].decode(), "diff": -1}]
    assert a.found["updates"] == []
    # The store still holds the old value beside the model's: a lost retraction, said so.
    assert row["value"].decode() in [v["value"] for v in a.found["values"]]
    assert a.expected["value"] != row["value"].decode()
    assert "lost retraction" in a.detail and "input records" in a.detail


def test_wrong_error_value_is_caught_in_errors(run: RunData) -> None:
    row = first(run, "errors", 1)
    changed = run.updates.with_columns(
        pl.when(
            (pl.col("collection") == "errors")
            & (pl.col("key") == row["key"])
            & (pl.col("ts") == row["ts"])
            & (pl.col("diff") == 1)
        )
        .then(pl.lit(b'{"offset": 999, "partition": 0, "reason": "null key"}'))
        .otherwise(pl.col("value"))
        .alias("value")
    )
    res = run_checkers(with_updates(run, changed)).checkers
    assert res["sealed_state"].valid is False
    assert res["sealed_state"].anomalies[0].collection == "errors"
    assert res["no_phantoms"].anomaly_counts.get("phantom-error") == 1


def test_bindings_going_back_and_past_the_log_end(run: RunData) -> None:
    moves = run.updates.filter((pl.col("collection") == "bindings") & (pl.col("diff") == 1))
    last = moves.sort("ts").row(-1, named=True)
    bumped = run.updates.with_columns(
        pl.when(
            (pl.col("collection") == "bindings")
            & (pl.col("ts") == last["ts"])
            & (pl.col("key") == last["key"])
            & (pl.col("diff") == 1)
        )
        .then(pl.lit(b"0"))
        .otherwise(pl.col("value"))
        .alias("value")
    )
    res = run_checkers(with_updates(run, bumped)).checkers["bindings"]
    assert res.anomaly_counts == {"offset-went-back": 1}
    a = res.anomalies[0]
    assert (a.key, a.step, a.found) == (last["key"].decode(), last["ts"], 0)

    past = run.updates.with_columns(
        pl.when(
            (pl.col("collection") == "bindings")
            & (pl.col("ts") == last["ts"])
            & (pl.col("key") == last["key"])
            & (pl.col("diff") == 1)
        )
        .then(pl.lit(b"100000"))
        .otherwise(pl.col("value"))
        .alias("value")
    )
    res = run_checkers(with_updates(run, past)).checkers["bindings"]
    assert res.anomaly_counts == {"bound-past-log-end": 1}


def test_bindings_behind_data(run: RunData) -> None:
    uppers = {**run.uppers, "bindings": run.uppers["data"] - 1}
    res = run_checkers(RunData(run.topic, run.updates, uppers, run.sinces, run.history))
    assert res.checkers["frontiers"].anomaly_counts == {"bindings-behind-data": 1}


def test_not_caught_up_and_a_lost_acknowledged_write(run: RunData) -> None:
    last = run.topic.sort("offset").filter(pl.col("partition") == 0).row(-1, named=True)
    extra = pl.DataFrame([{**last, "offset": last["offset"] + 1}], schema=run.topic.schema)
    longer = RunData(
        pl.concat([run.topic, extra]), run.updates, run.uppers, run.sinces, run.history
    )
    res = run_checkers(longer).checkers["completeness"]
    assert res.anomaly_counts == {"not-caught-up": 1}
    assert (res.anomalies[0].key, res.anomalies[0].expected) == ("0", last["offset"] + 2)

    acked = pl.concat(
        [run.history.acked, extra.select(pl.lit(0, pl.Int64).alias("time"), pl.all())]
    )
    lost = RunData(run.topic, run.updates, run.uppers, run.sinces, History(acked, run.history.ops))
    res = run_checkers(lost).checkers["completeness"]
    assert res.anomaly_counts == {"kafka-lost-write": 1}
    assert "Kafka anomaly" in res.anomalies[0].detail


def test_an_acknowledged_write_the_topic_holds_differently(run: RunData) -> None:
    acked = run.history.acked.lazy().collect()
    first = acked.row(0, named=True)
    changed = acked.with_columns(
        pl.when(pl.int_range(pl.len()) == 0)
        .then(pl.lit(b'{"v": "not what the topic holds"}'))
        .otherwise(pl.col("value"))
        .alias("value")
    )
    res = run_checkers(
        RunData(run.topic, run.updates, run.uppers, run.sinces, History(changed, run.history.ops))
    ).checkers["completeness"]
    assert res.anomaly_counts == {"kafka-changed-write": 1}
    a = res.anomalies[0]
    assert a.expected["offset"] == first["offset"]
    assert a.found == {"key": show(first["key"]), "value": show(first["value"])}


def test_final_state_mismatch_when_the_last_value_is_wrong(run: RunData) -> None:
    data = run.updates.filter(pl.col("collection") == "data")
    last = data.filter(pl.col("diff") == 1).sort("ts").row(-1, named=True)
    changed = run.updates.with_columns(
        pl.when(
            (pl.col("collection") == "data")
            & (pl.col("key") == last["key"])
            & (pl.col("ts") == last["ts"])
            & (pl.col("diff") == 1)
        )
        .then(pl.lit(b'{"v": 404}'))
        .otherwise(pl.col("value"))
        .alias("value")
    )
    res = run_checkers(with_updates(run, changed)).checkers["completeness"]
    assert res.anomaly_counts["final-state-mismatch"] == 2  # the right value missing, a wrong one


def test_seal_regression_in_the_history(run: RunData) -> None:
    ops = [
        *run.history.ops,
        {
            "index": 99,
            "time": 10**9,
            "process": "observer",
            "type": "info",
            "f": "uppers",
            "value": {"data": 2},
        },
    ]
    res = run_checkers(
        RunData(run.topic, run.updates, run.uppers, run.sinces, History(run.history.acked, ops))
    ).checkers["seal_monotonic"]
    assert res.valid is False
    a = res.anomalies[0]
    assert (a.kind, a.collection, a.found) == ("seal-went-back", "data", 2)
    assert "seen at history index" in a.expected


def test_no_history_is_unknown_not_valid(run: RunData) -> None:
    bare = RunData(run.topic, run.updates, run.uppers, run.sinces, History.empty("deleted"))
    res = run_checkers(bare)
    needs_history = ("seal_monotonic", "frontiers", "completeness")
    assert {n: res.checkers[n].valid for n in needs_history} == dict.fromkeys(needs_history)
    assert "checked 0 acknowledged writes" in (res.checkers["completeness"].error or "")
    assert res.valid is None
    assert res.input_problems and "deleted" in res.input_problems[0]
    others = {
        n: r.valid for n, r in res.checkers.items() if n not in needs_history and r.applicable
    }
    assert others == dict.fromkeys(others, True) and "as_of" not in others


def test_a_checker_that_raises_is_unknown_with_its_error(
    run: RunData, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sealcheck.checkers import registry

    def raising(_: RunData) -> None:
        raise pl.exceptions.ColumnNotFoundError('unable to find column "diff"')

    monkeypatch.setitem(registry.CHECKERS, "diff_of_one", raising)
    res = run_checkers(run)
    assert res.checkers["diff_of_one"].valid is None
    assert "diff" in (res.checkers["diff_of_one"].error or "")
    assert "Traceback" in (res.checkers["diff_of_one"].traceback or "")
    assert res.valid is None
    doc = res.to_json()
    assert doc["valid"] == "unknown"
    json.dumps(doc, default=str)


def test_context_names_the_last_nemesis_and_restart(run: RunData) -> None:
    ops = sorted(
        [
            *run.history.ops,
            {
                "index": 50,
                "time": 1500,
                "process": "nemesis",
                "type": "info",
                "f": "kill",
                "value": {"target": "pipeline"},
            },
            {
                "index": 51,
                "time": 1600,
                "process": "supervisor",
                "type": "info",
                "f": "sut-start",
                "value": {"incarnation": 2},
            },
        ],
        key=lambda op: op["time"],
    )
    hist = History(run.history.acked, ops)
    ctx = hist.context_for_step(2)
    assert ctx["last_nemesis"]["f"] == "kill"
    assert ctx["last_sut_start"]["value"] == {"incarnation": 2}


def test_derived_frames_are_computed_side_by_side_and_each_once(run: RunData) -> None:
    # checkers run two at a time: one computing a frame must not hold up another that needs a
    # different one (a single lock would keep "b" waiting until "a" gave up), and a frame
    # asked for again is not computed again
    copy = RunData(run.topic, run.updates, run.uppers, run.sinces, run.history)
    started, calls = threading.Event(), []

    def slow() -> pl.DataFrame:
        calls.append("a")
        assert started.wait(60), "b was held up while a was computed"
        return pl.DataFrame({"x": [1]})

    def other() -> pl.DataFrame:
        calls.append("b")
        started.set()
        return pl.DataFrame({"x": [2]})

    def never() -> pl.DataFrame:
        raise AssertionError("computed again")

    first = threading.Thread(target=copy._once, args=("a", slow))
    first.start()
    while "a" not in calls and first.is_alive():
        first.join(0.01)
    assert copy._once("b", other)["x"].to_list() == [2]
    first.join()
    assert copy._once("a", never)["x"].to_list() == [1] and calls == ["a", "b"]
