import json

from sealcheck.rundir.files import TopicRecord
from sealcheck_upsert_source.persist import Update
from sealcheck_upsert_source.upsert import SourceRecord, apply, error_key, upsert_step, winners
from tests.model import expected_state


def R(p: int, o: int, k: bytes | None, v: bytes | None) -> SourceRecord:
    return SourceRecord(p, o, k, v)


def test_highest_offset_wins_per_key() -> None:
    best = winners([R(0, 5, b"a", b"1"), R(0, 9, b"a", b"2"), R(0, 7, b"a", b"3")])
    assert best[error_key(b"a", 0)].value == b"2"


def test_new_key_changed_value_tombstone_and_unchanged() -> None:
    state = {b"a": b"1", b"b": b"1", b"c": b"1"}
    recs = [R(0, 1, b"a", b"2"), R(0, 2, b"b", None), R(0, 3, b"c", b"1"), R(0, 4, b"d", b"1")]
    out = upsert_step(recs, state, {}, 7)
    assert out.data == sorted(
        [
            Update(b"a", b"1", 7, -1),
            Update(b"a", b"2", 7, 1),
            Update(b"b", b"1", 7, -1),
            Update(b"d", b"1", 7, 1),
        ]
    )
    assert out.errors == []
    apply(state, out.data)
    assert state == {b"a": b"2", b"c": b"1", b"d": b"1"}


def test_tombstone_for_absent_key_emits_nothing() -> None:
    assert upsert_step([R(0, 1, b"x", None)], {}, {}, 0).data == []


def test_bad_records_go_to_errors_and_are_retracted_by_a_good_value() -> None:
    recs = [R(0, 1, None, b"1"), R(0, 2, b"\xff", b"1"), R(1, 3, b"k", b"{bad")]
    out = upsert_step(recs, {b"k": b"1"}, {}, 0)
    assert out.data == [Update(b"k", b"1", 0, -1)]
    reasons = {u.key: json.loads(u.value)["reason"] for u in out.errors}
    assert reasons == {
        b"null:0": "null key",
        error_key(b"\xff", 0): "key is not UTF-8",
        error_key(b"k", 1): "value is not UTF-8 JSON",
    }
    errors: dict[bytes, bytes] = {}
    apply(errors, out.errors)
    later = upsert_step([R(1, 9, b"k", b"2")], {}, errors, 1)
    assert later.data == [Update(b"k", b"2", 1, 1)]
    assert later.errors == [Update(error_key(b"k", 1), errors[error_key(b"k", 1)], 1, -1)]


def test_pipeline_logic_agrees_with_the_independent_model() -> None:
    import random

    rng = random.Random(11)
    raw_keys: list[bytes | None] = [b"a", b"b", b"c", b"\xfe", None]
    values: list[bytes | None] = [b"1", b"2", b"[3]", None, b"{oops", b"\xff"]
    # keys live in one partition each (Kafka's default partitioning); null keys anywhere
    home = {b"a": 0, b"b": 1, b"c": 0, b"\xfe": 1}
    offsets = [0, 0]
    topic = []
    for _ in range(400):
        key = rng.choice(raw_keys)
        p = home[key] if key is not None else rng.randrange(2)
        topic.append(TopicRecord(p, offsets[p], key, rng.choice(values)))
        offsets[p] += 1
    data: dict[bytes, bytes] = {}
    errors: dict[bytes, bytes] = {}
    for step, hi in enumerate(range(20, 261, 20)):
        lo = hi - 20
        recs = [
            SourceRecord(r.partition, r.offset, r.key, r.value)
            for r in topic
            if lo <= r.offset < hi
        ]
        out = upsert_step(winners(recs).values(), data, errors, step)
        apply(data, out.data)
        apply(errors, out.errors)
        model = expected_state(topic, {0: hi, 1: hi})
        assert data == model.data
        assert errors == model.errors
