"""The states of a Kafka topic of upserts at log ends taken between batches
(:func:`sealcheck.systems.outputs.topic.states`): pure logic, hand-made records."""

from __future__ import annotations

from sealcheck.rundir.files import TopicRecord
from sealcheck.systems.outputs.topic import states


def row(r: TopicRecord) -> tuple[bytes, bytes | None]:
    assert r.key is not None
    return r.key, r.value


def test_each_state_is_the_upsert_of_every_record_below_its_log_ends() -> None:
    recs = [
        TopicRecord(0, 0, b"a", b"1"),
        TopicRecord(0, 1, b"b", b"1"),
        TopicRecord(1, 0, b"c", b"1"),
        TopicRecord(0, 2, b"a", b"2"),  # a replayed batch may write a value twice: no change
        TopicRecord(0, 3, b"a", b"2"),
        TopicRecord(0, 4, b"b", None),  # a tombstone deletes
        TopicRecord(1, 1, b"c", b"1"),
    ]
    marks = [{0: 2, 1: 0}, {0: 5, 1: 2}, {0: 5, 1: 2}]
    assert states("data", recs, marks, row) == [
        ("data", b"a", b"1", 0, 1),
        ("data", b"b", b"1", 0, 1),
        ("data", b"a", b"1", 1, -1),
        ("data", b"a", b"2", 1, 1),
        ("data", b"b", b"1", 1, -1),
        ("data", b"c", b"1", 1, 1),
    ]


def test_records_past_the_last_state_are_not_in_any_state() -> None:
    recs = [TopicRecord(0, 0, b"a", b"1"), TopicRecord(0, 1, b"a", b"2")]
    assert states("errors", recs, [{0: 1}], row) == [("errors", b"a", b"1", 0, 1)]
