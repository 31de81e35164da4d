"""The vectorised building blocks against plain-Python definitions: sorting with the stable
fast path and its fallback, change points, wrapping fingerprints, record classification and
step assignment."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import orjson
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sealcheck.checkers import kafka_lost, replay
from sealcheck.checkers.frames import (
    _packed_sort,
    change_points,
    fingerprints,
    hash_order,
    pair_hash,
    signed,
    sort_runs,
)
from sealcheck.checkers.replay import REASONS, assign_steps, classify, error_bytes, reason_text
from sealcheck_upsert_source.upsert import SourceRecord, decide

SETTINGS = settings(max_examples=80, deadline=None)
small = st.integers(0, 4)


@SETTINGS
@given(st.lists(st.tuples(small, small, small), max_size=40), st.booleans())
def test_sort_runs_equals_a_full_sort(rows: list[tuple[int, int, int]], presorted: bool) -> None:
    if presorted:  # the fast path: already ordered by the inner columns
        rows = sorted(rows, key=lambda r: (r[1], r[2]))
    frame = pl.DataFrame(rows, schema={"k": pl.Int64, "a": pl.Int64, "b": pl.Int64}, orient="row")
    assert sort_runs(frame, "k", "a", "b").rows() == sorted(rows)
    whole = pl.DataFrame(sorted(rows), schema=frame.schema, orient="row")  # kept as it is
    assert sort_runs(whole, "k", "a", "b").rows() == sorted(rows)
    # one inner column, in order or not (two stable single-column sorts)
    by_ka = sort_runs(frame.select("k", "a"), "k", "a").rows()
    assert by_ka == sorted((k, a) for k, a, _ in rows)


hashes = st.one_of(
    st.integers(0, 2**64 - 1),
    st.integers(0, 7),  # low ones share their high bits
    st.integers(0, 7).map(lambda low: (0xABC << 52) | low),  # and high ones
)


@SETTINGS
@given(st.lists(st.tuples(hashes, st.integers(-3, 40)), max_size=40), st.sampled_from([1, 3]))
def test_sort_runs_of_hashes_by_a_narrow_column_is_a_stable_sort(
    rows: list[tuple[int, int]], copies: int
) -> None:
    # hashes and a time: one sort of the hash's high bits, the time and the row, packed, with
    # the runs where distinct hashes share their high bits put in order; by the hash alone
    # when more inner columns follow
    schema = {"k": pl.UInt64, "t": pl.Int64}
    frame = pl.DataFrame(rows * copies, schema=schema, orient="row").with_row_index("i")
    got = sort_runs(frame, "k", "t").rows()
    assert got == sorted(frame.rows(), key=lambda r: (r[1], r[2]))  # ties stay in input order
    alone = _packed_sort(frame, "k", None)
    if frame.height >= 2:
        assert alone is not None
        assert alone.rows() == sorted(frame.rows(), key=lambda r: r[1])
    assert sort_runs(frame, "k", "t", "i").rows() == sorted(frame.rows(), key=lambda r: r[1:])


@SETTINGS
@given(st.lists(st.tuples(hashes, st.integers(-(2**31), 2**31 - 1)), max_size=60))
def test_hash_order_is_a_stable_sort(rows: list[tuple[int, int]]) -> None:
    keys = np.array([k for k, _ in rows], dtype=np.uint64)
    within = np.array([t for _, t in rows], dtype=np.int32)
    for inner in (within, None):
        found = hash_order(keys, inner)
        assert found is not None
        order, ordered = found
        tie = inner if inner is not None else np.zeros(len(rows), np.int32)
        want = np.lexsort((np.arange(len(rows)), tie, keys))
        assert order.tolist() == want.tolist()
        assert ordered.tolist() == keys[want].tolist()


def test_sort_runs_puts_hashes_sharing_their_high_bits_in_order() -> None:
    # 8 and 9 differ only in the lowest bit, far below what is packed: their rows interleave
    # in the packed sort and are put in order after it
    frame = pl.DataFrame(
        {"k": [9, 8, 9, 8], "t": [1, 1, 0, 0]}, schema={"k": pl.UInt64, "t": pl.Int64}
    )
    packed = _packed_sort(frame, "k", "t")
    assert packed is not None and packed.rows() == [(8, 0), (8, 1), (9, 0), (9, 1)]
    assert sort_runs(frame, "k", "t").rows() == [(8, 0), (8, 1), (9, 0), (9, 1)]
    wide = pl.DataFrame(
        {"k": [5, 5, 3], "t": [2**64 - 1, 2**64 - 2, 0]}, schema={"k": pl.UInt64, "t": pl.UInt64}
    )
    assert _packed_sort(wide, "k", "t") is None  # a range of 64 bits: the two sorts
    assert sort_runs(wide, "k", "t").rows() == [(3, 0), (5, 2**64 - 2), (5, 2**64 - 1)]
    high = wide.with_columns(pl.col("t").clip(2**64 - 3))  # unsigned, near the top: packed
    assert sort_runs(high, "k", "t").rows() == [(3, 2**64 - 3), (5, 2**64 - 2), (5, 2**64 - 1)]
    nulls = frame.with_columns(pl.when(pl.col("t") == 0).then(pl.col("k")).alias("k"))
    assert _packed_sort(nulls, "k", "t") is None  # a null hash: the two sorts
    assert sort_runs(nulls, "k", "t").rows() == [(None, 1), (None, 1), (8, 0), (9, 0)]
    wider = frame.with_columns(pl.col("t").cast(pl.Int128))  # numpy holds no 128-bit integer
    assert _packed_sort(wider, "k", "t") is None
    assert sort_runs(wider, "k", "t").rows() == [(8, 0), (8, 1), (9, 0), (9, 1)]


updates = st.lists(
    st.tuples(small, small, st.integers(0, 5), st.sampled_from([-1, 1, 2])), max_size=40
)


@SETTINGS
@given(updates, st.integers(0, 3))
def test_change_points_are_the_multiplicity_after_every_change(
    rows: list[tuple[int, int, int, int]], since: int
) -> None:
    schema = {"kh": pl.UInt64, "vh": pl.UInt64, "ts": pl.Int64, "diff": pl.Int64}
    frame = pl.DataFrame(rows, schema=schema, orient="row").with_row_index("row")
    summed: dict[tuple[int, int, int], int] = defaultdict(int)
    for k, v, t, d in rows:
        summed[(k, v, max(t, since))] += d
    expected, mult = [], dict[tuple[int, int], int]()
    for (k, v, t), d in sorted(summed.items()):
        if d:
            mult[(k, v)] = mult.get((k, v), 0) + d
            expected.append((k, v, t, d, mult[(k, v)]))
    cp = change_points(frame, since)
    got = sorted(cp.select("kh", "vh", "ts", "diff", "mult").rows())
    assert got == expected


def test_fingerprints_wrap_and_cancel() -> None:
    big = 2**64 - 3
    frame = pl.DataFrame(
        {"ts": [0, 0, 0, 1, 1], "h": [big, big, 7, big, big], "diff": [1, 1, -1, 1, -1]},
        schema={"ts": pl.Int32, "h": pl.UInt64, "diff": pl.Int64},
    )
    fp = dict(fingerprints(frame, signed(pl.col("h"))).rows())
    assert fp == {0: (2 * big - 7) % 2**64}  # wrapped; step 1 cancels out and is dropped


def test_pair_hash_is_ordered_and_null_aware() -> None:
    frame = pl.DataFrame(
        {"a": [1, 2, None], "b": [2, 1, 1]}, schema={"a": pl.UInt64, "b": pl.UInt64}
    )
    ab, ba, nb = frame.select(pair_hash("a", "b")).to_series().to_list()
    assert len({ab, ba, nb}) == 3 and None not in (ab, ba, nb)


raw = st.one_of(
    st.none(),
    st.binary(max_size=6),
    st.sampled_from(
        [
            b'{"v": 1}',
            b'{"a": "x", "n": -12}',
            b"{}",
            b'{"a": 01}',
            b'{"a": "\\u00e9"}',
            b'{"a": "\xc3\xa9"}',
            b"[1]",
            b"NaN",
            b'{"a": 1,}',
            b'"\\ud800"',
            b"\xff",
            b"null",
        ]
    ),
)


@SETTINGS
@given(st.lists(st.tuples(raw, raw), min_size=1, max_size=30))
def test_classify_agrees_with_the_pipeline(pairs: list[tuple[bytes | None, bytes | None]]) -> None:
    topic = pl.DataFrame(
        [(0, i, k, v) for i, (k, v) in enumerate(pairs)],
        schema={"partition": pl.Int64, "offset": pl.Int64, "key": pl.Binary, "value": pl.Binary},
        orient="row",
    )
    records, errors = classify(topic)
    err = dict(errors.select("row", "evh").iter_rows())
    texts = records.with_row_index("row").filter(pl.col("reason") != 0)
    by_row = {
        r: e
        for r, e in texts.select("row", "partition", "offset", reason_text())
        .with_columns(error_bytes(pl.col("reason")).alias("e"))
        .select("row", "e")
        .iter_rows()
    }
    for i, (k, v) in enumerate(pairs):
        _, data_value, error_value = decide(SourceRecord(0, i, k, v))
        reason = records["reason"][i]
        assert (reason == 0) == (error_value is None), (k, v)
        if reason:
            assert by_row[i] == error_value and i in err
            assert orjson.loads(error_value)["reason"] == REASONS[reason]
        elif data_value is not None:
            assert records["rvh"][i] is not None


def test_classify_in_batches_keeps_topic_order_and_error_rows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # many small batches, classified a few at a time in threads: the same frames as one
    values = [b'{"a": 1}', b"\xff", None, b"not json", b'{"b": "x"}', b"[1]", b"{}"] * 7
    topic = pl.DataFrame(
        {
            "partition": [i % 3 for i in range(len(values))],
            "offset": list(range(len(values))),
            "key": [None if i % 5 == 0 else f"k{i % 4}".encode() for i in range(len(values))],
            "value": values,
        },
        schema={"partition": pl.Int64, "offset": pl.Int64, "key": pl.Binary, "value": pl.Binary},
    )
    whole = classify(topic)
    monkeypatch.setattr(replay, "BATCH", 4)
    for lazy in (False, True):
        batched = classify(topic.lazy() if lazy else topic)
        assert batched[0].equals(whole[0]) and batched[1].equals(whole[1])
    assert whole[1].height > 10  # errors from many batches, their rows counted across them


def test_assign_steps_uses_the_range_that_holds_each_offset() -> None:
    records = pl.DataFrame({"partition": [0, 0, 0, 1, 1], "offset": [0, 1, 5, 0, 3]})
    ranges = pl.DataFrame(
        {"partition": [0, 0, 1], "ts": [0, 2, 1], "start": [0, 1, 0], "end": [1, 3, 2]}
    )
    assert assign_steps(records, ranges).to_list() == [0, 2, None, 1, None]


@settings(max_examples=60, deadline=None)
@given(
    st.sets(st.integers(0, 2**41), max_size=40),
    st.lists(st.integers(0, 2**41), max_size=20),
    st.booleans(),
)
def test_locate_finds_the_record_at_each_position(
    held: set[int], others: list[int], shuffled: bool
) -> None:
    ordered = sorted(held)
    if shuffled:
        ordered.reverse()
    where = {p: i for i, p in enumerate(ordered)}
    wanted = [*ordered[::2], *others]
    got = kafka_lost.locate(np.array(ordered, dtype=np.int64), np.array(wanted, dtype=np.int64))
    assert got.tolist() == [where.get(p, -1) for p in wanted]


def test_locate_gives_the_first_record_of_a_repeated_position() -> None:
    held = np.array([5, 3, 3, -1], dtype=np.int64)  # unordered; -1: partition 0, offset -1
    wanted = np.array([3, -1, 4, 5], dtype=np.int64)
    assert kafka_lost.locate(held, wanted).tolist() == [1, 3, -1, 0]
    assert kafka_lost.locate(held[:0], wanted).tolist() == [-1, -1, -1, -1]
