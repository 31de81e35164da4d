"""A descriptor's own records (:mod:`sealcheck.core.records`): Sealcheck draws each record's
key number and kind from the writer's seed exactly as for its own records, and the descriptor's
``record(draw)`` says what the topic carries, with values from a second seeded source. The same
seed gives the same records; a ``record`` that raises or returns what is not a record is one
line before anything starts; one whose upserts repeat their key's value is warned about."""

from __future__ import annotations

import itertools
import json
import random
from dataclasses import dataclass
from typing import Any

import pytest

from sealcheck import Delete, Draw, Job, JobRun, NewRecord, Record, SQLiteOutput, Upsert
from sealcheck.core.effects import DeadLetter, Effects
from sealcheck.core.records import RecordError, checked_record
from sealcheck.harness.run.config import ConfigError, load_config
from sealcheck.harness.run.test import build_test
from sealcheck.harness.run.tried import sample_records
from sealcheck.harness.run.workload import (
    BAD,
    NOT_JSON,
    TOMBSTONE,
    UPSERT,
    UpsertMix,
    records,
    writer_records,
)


@dataclass(frozen=True)
class Orders(Job):
    """A job whose topic carries orders of its own JSON schema (``fault``: what goes wrong)."""

    name = "orders"
    fault: str = ""

    def command(self, run: JobRun) -> Any:
        return ["python", "-m", "orders", "--dir", run.dir]

    def output(self, run: JobRun) -> Any:
        return SQLiteOutput(run.dir / "orders.db", data="orders", key="order_id")

    def record(self, draw: Draw) -> NewRecord:
        key = f"order-{draw.key}".encode()
        if self.fault == "raises" and draw.kind == "bad":
            raise KeyError("schema")
        if self.fault == "text":
            return NewRecord(key, "not bytes")  # type: ignore[arg-type]
        if self.fault == "partition":
            return NewRecord(key, b"{}", partition=7)
        if self.fault == "global-random":  # not draw.rng: another value every time
            import random as anywhere

            return NewRecord(key, b"%d" % anywhere.getrandbits(32))
        if draw.kind == "tombstone":
            return NewRecord(key, None)
        if draw.kind == "bad":
            return NewRecord(key, b'{"order_id": "x", "amount": "not a number"}')
        amount = "1.00" if self.fault == "repeats" else f"{draw.rng.randrange(1, 10**6) / 100:.2f}"
        doc = {"order_id": draw.key, "amount": amount, "by": draw.writer}
        if self.fault != "repeats":
            doc["seq"] = draw.number
        return NewRecord(key, json.dumps(doc).encode(), headers=[("source", b"web")])

    def effect(self, record: Record) -> Effects:
        key = record.key_text
        if record.value is None:
            return Delete(key)  # type: ignore[arg-type]
        doc = json.loads(record.value)
        if self.fault == "effect-reads-cents":  # reads a field its own records lack
            return Upsert(key, {"cents": doc["cents"]})  # type: ignore[arg-type]
        if not isinstance(doc.get("order_id"), int):
            return DeadLetter(key, {"offset": record.offset})  # type: ignore[arg-type]
        return Upsert(key, {"amount": doc["amount"]})  # type: ignore[arg-type]


MIX = UpsertMix(keys=50, tombstone_ratio=0.2, bad_ratio=0.1)


def _stream(seed: int, writer: str = "w0", n: int = 500) -> list[tuple[str, NewRecord]]:
    return list(itertools.islice(writer_records(seed, MIX, writer, Orders().record), n))


def test_the_same_seed_gives_the_same_records_and_another_seed_others() -> None:
    assert _stream(3) == _stream(3)
    assert _stream(3) != _stream(4)
    assert _stream(3, "w0") != _stream(3, "w1")  # the writer is in each value


def test_keys_and_kinds_are_drawn_as_for_sealcheck_s_own_records() -> None:
    """The draws of keys and kinds use the writer's RNG alone: the descriptor's records have
    the same keys and kinds, record for record, as Sealcheck's own for the same seed."""
    own = list(itertools.islice(records(random.Random(3), MIX, "w0"), 500))
    mine = _stream(3)
    for (key, value), (what, new) in zip(own, mine, strict=True):
        if key is not None:  # Sealcheck's own bad records may lack a key
            assert new.key == key.replace(b"k", b"order-", 1)
        if value is None:
            assert what == TOMBSTONE
    assert {what for what, _ in mine} == {UPSERT, TOMBSTONE, BAD}


def test_values_come_from_their_own_source_so_a_record_s_value_drawing_changes_no_key() -> None:
    class Lavish(Orders):
        def record(self, draw: Draw) -> NewRecord:
            draw.rng.random()  # draws more values than Orders does
            return super().record(draw)

    lavish = itertools.islice(writer_records(3, MIX, "w0", Lavish().record), 500)
    assert [r.key for _, r in lavish] == [r.key for _, r in _stream(3)]


def test_the_sample_tried_before_the_run_is_the_descriptor_s_records() -> None:
    spec = load_config(None, {"nemeses": ["kill"], "partitions": 3})
    sample = list(sample_records(spec.workload, [11, 12], 3, Orders().record))
    assert all(r.key is not None and r.key.startswith(b"order-") for r in sample)
    assert any(r.value is None for r in sample)


def _refusal(fault: str) -> str:
    test = build_test(load_config(None, {"nemeses": ["kill"]}), sut=Orders(fault))
    with pytest.raises(ConfigError) as info:
        test.validate()
    message = str(info.value)
    assert "\n" not in message
    return message


def test_a_record_that_raises_or_is_not_bytes_is_one_line_before_anything_starts() -> None:
    assert _refusal("raises") == (
        "Orders.record(draw) raised KeyError: 'schema': fix the descriptor's record (it is "
        "tried on a sample of the run's draws before the run starts)"
    )
    assert _refusal("text") == (
        "Orders.record(draw) returned a record that is not one: its value is 'not bytes' (str): "
        "a record's value is bytes or None (encode text with .encode(), Avro with fastavro)"
    )
    assert _refusal("partition").endswith(
        "its partition is 7: the run's topic has 3 (0 to 2; --partitions sets how many)"
    )


class NoEffect(Orders):
    """Its own records, and no word on what they do."""

    name = "no-effect"
    effect = Job.effect  # type: ignore[assignment]


def test_records_without_their_effect_are_refused() -> None:
    test = build_test(load_config(None, {"nemeses": ["kill"]}), sut=NoEffect())
    with pytest.raises(ConfigError, match=r"defines record\(draw\) but not effect\(record\)"):
        test.validate()


def test_upserts_that_repeat_their_key_s_value_are_warned_about(
    capsys: pytest.CaptureFixture[str],
) -> None:
    build_test(load_config(None, {"nemeses": ["kill"]}), sut=Orders()).validate()
    assert "warning" not in capsys.readouterr().err
    build_test(load_config(None, {"nemeses": ["kill"]}), sut=Orders("repeats")).validate()
    err = capsys.readouterr().err
    assert "of Orders.record(draw)'s upserts repeat their key's previous value" in err
    assert "put draw.number (or draw.writer) in the value" in err


def test_a_checked_record_names_the_part_that_is_wrong() -> None:
    assert checked_record(NewRecord(b"k", None)) == NewRecord(b"k", None)
    for bad, fragment in (
        ((b"k", b"v"), "is not a record: return sealcheck.NewRecord"),
        (NewRecord(b"k", b"v", headers=[("h", "text")]), "header ('h', 'text')"),  # type: ignore[list-item]
        (NewRecord(b"k", b"v", partition=-1), "its partition is -1 (int)"),
    ):
        with pytest.raises(RecordError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
            checked_record(bad)


def test_sealcheck_s_own_records_are_unchanged_by_the_hook() -> None:
    """Without a ``record``, the stream is Sealcheck's own, kinds named as before."""
    own = list(itertools.islice(writer_records(5, UpsertMix(bad_ratio=0.5), "w1"), 300))
    assert [(r.key, r.value) for _, r in own] == list(
        itertools.islice(records(random.Random(5), UpsertMix(bad_ratio=0.5), "w1"), 300)
    )
    assert NOT_JSON in {what for what, _ in own}


def test_headers_go_from_the_topic_dump_to_the_mapping_and_old_dumps_still_read(
    tmp_path: Any,
) -> None:
    import pyarrow.parquet as pq

    from sealcheck.core.effects import encode_row
    from sealcheck.rundir.effects import write_effects
    from sealcheck.rundir.files import TopicRecord, topic_records, write_topic

    dumped = [
        TopicRecord(0, 0, b"order-1", b"1", (("source", b"web"), ("trace", b"\x00\x01"))),
        TopicRecord(0, 1, b"order-2", b"2"),
    ]
    topic = tmp_path / "topic.parquet"
    write_topic(dumped, topic)
    assert topic_records(pq.read_table(topic)) == dumped

    def by_source(record: Record) -> Effects:
        return Upsert(record.key_text or "", {"source": dict(record.headers).get("source", b"")})

    assert write_effects(topic, by_source, tmp_path / "effects.parquet") == 2
    rows = pq.read_table(tmp_path / "effects.parquet").to_pylist()
    assert [r["value"] for r in rows] == [
        encode_row({"source": b"web"}),  # the header reached the mapping
        encode_row({"source": b""}),
    ]
    old = tmp_path / "old" / "topic.parquet"  # a dump written before headers were kept
    old.parent.mkdir()
    pq.write_table(pq.read_table(topic).drop_columns(["headers"]), old)
    assert [r.headers for r in topic_records(pq.read_table(old))] == [(), ()]
    assert write_effects(old, by_source, tmp_path / "old" / "effects.parquet") == 2


def test_the_tutorial_s_descriptor_with_its_own_records_works_as_shown() -> None:
    """docs/your-own-job.md, section 11: its code, run as it is on a sample of a run's draws."""
    import re

    from sealcheck import WorkloadConfig
    from sealcheck.core.effects import checked_effects
    from tests.product import ROOT

    text = (ROOT / "docs" / "your-own-job.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    # the section's first (the SQLite job's; the orders example's is tested from its project)
    [code] = [b for b in blocks if "class Orders(Job)" in b and "SQLiteOutput" in b]
    space: dict[str, Any] = {"__name__": "tutorial_orders"}
    exec(compile(code, "your-own-job.md", "exec"), space)  # the docs' own code
    orders = space["Orders"]()
    workload = WorkloadConfig(bad_ratio=0.1, tombstone_ratio=0.1)
    sample = list(sample_records(workload, [1, 2], 3, orders.record))
    kinds = {(type(e).__name__, e.table) for r in sample for e in checked_effects(orders.effect(r))}
    assert kinds == {("Upsert", "data"), ("Delete", "data"), ("Upsert", "errors")}
    assert all(r.key is not None and r.key.startswith(b"order-") for r in sample)


def test_an_effect_that_cannot_read_the_descriptor_s_own_records_is_one_line() -> None:
    message = _refusal("effect-reads-cents")
    assert message.startswith("Orders.effect(record) raised KeyError: 'cents' for the record key ")
    assert "b'order-" in message


def test_a_record_that_is_not_the_same_for_the_same_draw_is_refused() -> None:
    assert _refusal("global-random") == (
        "Orders.record(draw) gave another record for the same draw (writer w0, record 0): draw "
        "values from draw.rng alone — not the random module, a clock or uuid4 — so the same "
        "seed gives the same records"
    )
