"""Avro values for a descriptor's own records (:mod:`sealcheck.formats.avro`): drawn from the
draw alone (the same draw, the same bytes), decodable as the job decodes them (raw, or in
Confluent's wire format), and over a run's draws every edge a job must survive — nulls in
nullable fields, the extremes of numbers and decimals, text beyond the BMP, late and
out-of-order event times; a ``bad`` value never decodes."""

from __future__ import annotations

import datetime as dt
import decimal
import itertools
import random

import pytest

from sealcheck import Draw
from sealcheck.formats import AvroValues

ORDER = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [
        {"name": "order_id", "type": "long"},
        {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal",
                                    "precision": 10, "scale": 2}},
        {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "placed", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "status", "type": {"type": "enum", "name": "Status",
                                    "symbols": ["NEW", "PAID", "SHIPPED"]}},
        {"name": "lines", "type": {"type": "array", "items": {
            "type": "record", "name": "Line",
            "fields": [{"name": "sku", "type": "string"}, {"name": "qty", "type": "int"}]}}},
    ],
}  # fmt: skip


def _draws(n: int, seed: int = 7) -> list[Draw]:
    rng = random.Random(seed)
    return [Draw(i % 40, "upsert", i, "w0", rng) for i in range(n)]


def test_the_same_draw_gives_the_same_bytes_and_they_decode_to_the_value() -> None:
    values = AvroValues(ORDER)
    one = [values.encode(values.draw(d, order_id=d.key)) for d in _draws(200)]
    two = [values.encode(values.draw(d, order_id=d.key)) for d in _draws(200)]
    assert one == two
    for d in _draws(50):
        value = values.draw(d, order_id=d.key)
        assert values.decode(values.encode(value)) == value
        assert value["order_id"] == d.key  # a fixed field as given


def test_the_wire_format_carries_the_schema_id_and_is_checked() -> None:
    values = AvroValues(ORDER, schema_id=42)
    [d] = _draws(1)
    data = values.encode(values.draw(d))
    assert data[:5] == b"\x00\x00\x00\x00\x2a"
    assert values.decode(data)["status"] in ("NEW", "PAID", "SHIPPED")
    with pytest.raises(ValueError, match="schema id 7, not 42"):
        values.decode(b"\x00\x00\x00\x00\x07" + data[5:])
    with pytest.raises(ValueError, match="wire format"):
        values.decode(data[5:])


def test_over_a_run_s_draws_every_edge_appears() -> None:
    values = AvroValues(ORDER)
    drawn = [values.draw(d) for d in _draws(2000)]
    notes = [v["note"] for v in drawn]
    assert None in notes and "" in notes and any("\U0001d11e" in (n or "") for n in notes)
    ids = {v["order_id"] for v in drawn}
    assert {-(2**63), 2**63 - 1, 0} <= ids
    amounts = {v["amount"] for v in drawn}
    top = decimal.Decimal("99999999.99")
    assert {top, -top, decimal.Decimal("0.01")} <= amounts
    assert all(a.as_tuple().exponent == -2 for a in amounts)  # the schema's scale
    placed = [v["placed"] for v in drawn]
    late = sum(b < a for a, b in itertools.pairwise(placed))
    assert late > 100  # event times out of order within the writer's stream ...
    assert all(abs(p - dt.datetime(2026, 1, 1, tzinfo=dt.UTC)) < dt.timedelta(hours=2)
               for p in placed)  # fmt: skip  # ... within an hour of its place, no clock read
    assert any(v["lines"] == [] for v in drawn) and any(len(v["lines"]) == 3 for v in drawn)


def test_a_bad_value_never_decodes() -> None:
    for schema_id in (None, 9):
        values = AvroValues(ORDER, schema_id=schema_id)
        for d in _draws(200):
            with pytest.raises(ValueError):
                values.decode(values.bad(d))


def test_a_schema_that_is_not_a_record_is_refused() -> None:
    with pytest.raises(ValueError, match="schema of type 'string': give an Avro record schema"):
        AvroValues({"type": "string"})
