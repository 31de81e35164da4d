"""The read's column-wise winners agree with the pipeline's reference rule
(:func:`sealcheck_upsert_source.upsert.winners`) on any records, ties and null keys included."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from sealcheck_upsert_source.source import decode, winners_table
from sealcheck_upsert_source.upsert import SourceRecord, winners

KEYS = st.sampled_from([None, b"", b"a", b"b", b"\xff"])
VALUES = st.sampled_from([None, b"1", b"not json"])
RECORD = st.tuples(st.integers(0, 2), st.integers(0, 3), KEYS, VALUES)


def _table(records: list[SourceRecord]) -> pa.Table:
    return pa.table(
        {
            "key": pa.array([r.key for r in records], pa.binary()),
            "partition": pa.array([r.partition for r in records], pa.int32()),
            "offset": pa.array([r.offset for r in records], pa.int64()),
            "value": pa.array([r.value for r in records], pa.binary()),
        }
    )


@settings(max_examples=300, deadline=None)
@given(st.lists(RECORD, max_size=30))
def test_winners_table_is_the_reference_rule(
    raw: list[tuple[int, int, bytes | None, bytes | None]],
) -> None:
    seen: set[tuple[int, int]] = set()
    records = []
    for p, o, k, v in raw:  # a position holds one record; equal offsets across partitions tie
        if (p, o) not in seen:
            seen.add((p, o))
            records.append(SourceRecord(p, o, k, v))
    got = decode(winners_table(_table(records)))
    by_position = sorted(winners(records).values(), key=lambda r: (r.partition, r.offset))
    assert sorted(got, key=lambda r: (r.partition, r.offset)) == by_position


def test_a_null_key_and_an_empty_key_are_different_slots() -> None:
    records = [SourceRecord(0, 5, None, b"1"), SourceRecord(0, 3, b"", b"2")]
    got = sorted(decode(winners_table(_table(records))), key=lambda r: r.offset)
    assert got == [records[1], records[0]]


def test_chunked_input_and_an_empty_range() -> None:
    first = _table([SourceRecord(1, 0, b"a", b"1"), SourceRecord(0, 0, b"a", b"2")])
    second = _table([SourceRecord(1, 1, b"a", b"3")])
    chunked = pa.concat_tables([first, second])
    assert decode(winners_table(chunked)) == [SourceRecord(1, 1, b"a", b"3")]
    assert decode(winners_table(_table([]))) == []
