"""JSON documents shaped like a user's example (:mod:`sealcheck.formats.json_values`): the same
draw gives the same bytes; each field keeps its kind and form (a decimal its scale, an event
time its form and zone); over a run's draws every edge appears; a ``bad`` value never reads."""

from __future__ import annotations

import datetime as dt
import decimal
import itertools
import random
import re

import pytest

from sealcheck import Draw
from sealcheck.formats import JsonValues

EXAMPLE = {
    "sku": "A-100",
    "qty": 3,
    "price": "12.99",
    "weight": 0.5,
    "gift": False,
    "placed": "2026-05-01T10:00:00.123+02:00",
    "note": "fragile",
    "tags": ["x"],
    "ship": {"city": "Lyon", "zip": 69001},
}


def _draws(n: int, seed: int = 3) -> list[Draw]:
    rng = random.Random(seed)
    return [Draw(i % 30, "upsert", i, "w1", rng) for i in range(n)]


def test_the_same_draw_gives_the_same_bytes_and_each_field_keeps_its_kind() -> None:
    values = JsonValues(EXAMPLE, nullable=("note",))
    one = [values.encode(values.draw(d, sku=f"item-{d.key}")) for d in _draws(300)]
    assert one == [values.encode(values.draw(d, sku=f"item-{d.key}")) for d in _draws(300)]
    for d in _draws(200):
        doc = values.draw(d, sku=f"item-{d.key}")
        assert values.decode(values.encode(doc)) == doc and doc["sku"] == f"item-{d.key}"
        assert isinstance(doc["qty"], int) and not isinstance(doc["qty"], bool)
        assert re.fullmatch(r"-?\d+\.\d\d", doc["price"])  # the example's scale
        assert re.fullmatch(r"2026-0\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+02:00", doc["placed"]) or (
            doc["placed"].startswith("2025-12-31T")
        )
        assert isinstance(doc["gift"], bool) and isinstance(doc["ship"]["zip"], int)
        assert all(isinstance(t, str) for t in doc["tags"])


def test_over_a_run_s_draws_every_edge_appears() -> None:
    values = JsonValues(EXAMPLE, nullable=("note",))
    docs = [values.draw(d) for d in _draws(3000)]
    assert None in {d["note"] for d in docs}
    assert any("\U0001d11e" in (d["note"] or "") for d in docs)
    assert {2**52 - 1, -(2**52), 0} <= {d["qty"] for d in docs}
    prices = {decimal.Decimal(d["price"]) for d in docs}
    assert decimal.Decimal("0.01") in prices and decimal.Decimal("999999999999.99") in prices
    times = [dt.datetime.fromisoformat(d["placed"]) for d in docs]
    assert sum(b < a for a, b in itertools.pairwise(times)) > 100  # late, out of order


def test_a_bad_value_never_reads_and_a_wrong_example_is_refused() -> None:
    values = JsonValues(EXAMPLE)
    for d in _draws(300):
        with pytest.raises(ValueError):
            values.decode(values.bad(d))
    with pytest.raises(ValueError, match="give one JSON object"):
        JsonValues("[1, 2]")
    with pytest.raises(ValueError, match=r"nullable names \['notes'\]"):
        JsonValues(EXAMPLE, nullable=("notes",))
