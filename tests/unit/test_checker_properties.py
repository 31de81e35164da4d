"""Property tests: random upsert histories from a correct reference pass every checker; one
random mutation of the persisted updates or the history is always detected."""

from __future__ import annotations

import polars as pl
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from sealcheck.checkers import run_checkers
from sealcheck.checkers.inputs import RunData
from sealcheck.checkers.steps import merge
from sealcheck.rundir.history import History
from tests.runs import build_run, compacted, with_updates

keys = st.sampled_from([b"a", b"b", b"c", b"d", b"\xfe", None])
values = st.sampled_from([b'{"v": 1}', b'{"v": 2}', b"[3]", b"4", None, b"{nope", b"\xff"])
pairs = st.lists(st.tuples(keys, values), min_size=1, max_size=40)
layout = st.tuples(st.integers(1, 3), st.integers(1, 6))

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(pairs, layout)
def test_correct_runs_are_valid(records: list, shape: tuple[int, int]) -> None:
    run = build_run(records, partitions=shape[0], step_size=shape[1])
    res = run_checkers(run)
    assert res.valid is True, {n: r.anomaly_counts for n, r in res.checkers.items()}


@FAST
@given(pairs, layout, st.integers(1, 3), st.integers(0, 10_000))
def test_correct_runs_compacted_in_part_are_valid(
    records: list, shape: tuple[int, int], done: int, pick: int
) -> None:
    # Compaction is one transaction per collection (bindings, data, errors): a crash can stop
    # it after any of them, at any since below the upper.
    run = build_run(records, partitions=shape[0], step_size=shape[1])
    assume(run.uppers["data"] >= 2)
    since = 1 + pick % (run.uppers["data"] - 1)
    part = compacted(run, since, ["bindings", "data", "errors"][:done])
    res = run_checkers(part)
    # nothing is blamed, but the merged steps were not judged one by one: never VALID
    assert not any(r.anomaly_counts for r in res.checkers.values()), res.checkers
    assert res.valid is None and res.checkers["sealed_state"].valid is None
    # with every step captured as it was sealed, every step is judged again: VALID
    rows = run.updates
    ranges = {c: [(0, u)] for c, u in run.uppers.items()}
    updates, sinces, steps = merge(part.updates.lazy(), part.uppers, part.sinces, {}, rows, ranges)
    full = RunData(part.topic, updates, part.uppers, sinces, part.history, steps=steps)
    res = run_checkers(full)
    assert res.valid is True, {n: (r.anomaly_counts, r.error) for n, r in res.checkers.items()}


MUTATIONS = ["drop", "duplicate", "reorder", "wrong-value", "seal-regression"]


def mutate(run: RunData, kind: str, pick: int) -> RunData:
    ups = run.updates.with_row_index("row")
    content = ups.filter(pl.col("collection") != "bindings")
    row = content.row(pick % content.height, named=True)
    this = pl.col("row") == row["row"]
    if kind == "drop":
        return with_updates(run, ups.filter(~this).drop("row"))
    if kind == "duplicate":
        return with_updates(run, pl.concat([ups, ups.filter(this)]).drop("row"))
    if kind == "reorder":
        upper = run.uppers[row["collection"]]
        to = row["ts"] + 1 if row["ts"] + 1 < upper else row["ts"] - 1
        assume(to >= 0)
        moved = ups.with_columns(pl.when(this).then(to).otherwise(pl.col("ts")).alias("ts"))
        return with_updates(run, moved.drop("row"))
    if kind == "wrong-value":
        changed = ups.with_columns(
            pl.when(this).then(pl.lit(b'{"mutant": 1}')).otherwise(pl.col("value")).alias("value")
        )
        return with_updates(run, changed.drop("row"))
    ops = run.history.ops
    seen = list(run.history.observations())
    assume(len(seen) >= 2)
    late = {
        **seen[-1],
        "index": len(ops),
        "time": ops[-1]["time"] + 1,
        "value": {"data": seen[0]["value"]["data"] - 1},
    }
    return RunData(
        run.topic, run.updates, run.uppers, run.sinces, History(run.history.acked, [*ops, late])
    )


@FAST
@given(pairs, layout, st.sampled_from(MUTATIONS), st.integers(0, 10_000))
def test_any_single_mutation_is_detected(
    records: list, shape: tuple[int, int], kind: str, pick: int
) -> None:
    run = build_run(records, partitions=shape[0], step_size=shape[1])
    assume(run.updates.filter(pl.col("collection") != "bindings").height > 0)
    res = run_checkers(mutate(run, kind, pick))
    assert res.valid is False, (kind, {n: r.valid for n, r in res.checkers.items()})


@FAST
@given(pairs, layout, st.sampled_from(MUTATIONS), st.integers(0, 10_000))
def test_the_prefix_checker_is_the_weaker_check(
    records: list, shape: tuple[int, int], kind: str, pick: int
) -> None:
    # prefix judges without the bindings: whatever it flags, sealed_state (which knows the
    # prefix each step must equal) flags too
    run = build_run(records, partitions=shape[0], step_size=shape[1])
    assume(run.updates.filter(pl.col("collection") != "bindings").height > 0)
    res = run_checkers(mutate(run, kind, pick), ["prefix", "sealed_state"])
    if res.checkers["prefix"].valid is False:
        assert res.checkers["sealed_state"].valid is False, res.checkers["prefix"].anomalies


positions = st.tuples(st.integers(0, 2), st.integers(0, 4))
written = st.tuples(positions, st.sampled_from([b"a", b"b", None]), st.sampled_from([b"1", None]))


@FAST
@given(st.lists(written, max_size=12), st.lists(written, max_size=12), st.booleans())
def test_kafka_lost_writes_are_those_no_record_holds_whole(
    topic: list, acks: list, reverse: bool
) -> None:
    # The topic may hold a position twice, out of order: a write is lost when no record of
    # the topic matches it whole, and the topic holds another record there when any record
    # has its position.
    rows = sorted(topic, key=lambda r: r[0], reverse=reverse)
    frame = pl.DataFrame(
        [(p, o, k, v) for (p, o), k, v in rows],
        schema={"partition": pl.Int64, "offset": pl.Int64, "key": pl.Binary, "value": pl.Binary},
        orient="row",
    )
    acked = pl.DataFrame(
        [(0, p, o, k, v) for (p, o), k, v in acks],
        schema={"time": pl.Int64, **frame.schema},
        orient="row",
    )
    run = RunData(frame, pl.DataFrame(), {}, {}, History(acked, []))
    lost = run.kafka_lost()
    want = [(i, any(r[0] == a[0] for r in topic)) for i, a in enumerate(acks) if a not in topic]
    assert list(zip(lost["ack"].to_list(), lost["present"].to_list(), strict=True)) == want
