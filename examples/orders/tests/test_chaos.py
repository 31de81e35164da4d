"""Chaos tests of the orders job, fed its own records (Avro in Confluent's wire format, with
null notes, boundary decimals, text beyond the BMP and out-of-order event times): crashed
and paused while it runs, it loses nothing and invents nothing; an amount passed through a
double, or the order placed last winning over the record written last, is named at its
batch and key; and a recorded sample of the topic replays as the workload."""

from __future__ import annotations

import decimal
import json
from pathlib import Path

import pyarrow.parquet as pq
from orders_sealcheck import VALUES, Orders

#: Short runs of a slow job (a restart costs a JVM, Spark and Delta: ~30 s on 2 cores).
RUN = {"keys": 200, "rate": 100}
SAMPLE = Path(__file__).parent.parent / "samples" / "orders.parquet"


def test_the_job_loses_nothing_when_killed_and_paused(sealcheck) -> None:
    result = sealcheck(Orders(), nemeses=["kill", "pause"], duration=18, interval=6, **RUN)
    result.assert_valid()


def first_wrong(result) -> tuple[dict, list[tuple[int, dict]]]:
    """The row the first wrong batch left for its key (as Sealcheck read it from the table),
    and the key's orders in the topic (the ones the job can decode), with their offsets."""
    result.assert_invalid("sealed_state")
    first = next(a for a in result.anomalies if a.checker == "sealed_state")
    assert first.kind == "state-mismatch" and first.key.startswith("order-"), first
    rows = pq.read_table(result.run_dir / "export" / "updates.parquet").to_pylist()
    key = first.key.encode()
    [row] = [
        json.loads(r["value"])
        for r in rows
        if (r["collection"], r["key"], r["ts"]) == ("data", key, first.step) and r["diff"] > 0
    ]
    topic = pq.read_table(result.run_dir / "topic.parquet").to_pylist()
    mine = sorted((r["offset"], r["value"]) for r in topic if r["key"] == key and r["value"])
    return row, [(o, order) for o, v in mine if (order := decoded(v)) is not None]


def decoded(value: bytes) -> dict | None:
    """An order, or None for a value the job rejects."""
    try:
        return VALUES.decode(value)
    except ValueError:
        return None


def same_order(row: dict, order: dict) -> bool:
    """Whether the table's row was written from ``order`` (the fields no bug touches)."""
    return all(row[f] == order[f] for f in ("customer", "note", "revision"))


def test_an_amount_through_a_double_is_caught_at_its_batch_and_key(sealcheck) -> None:
    bug = "amount-through-double"
    result = sealcheck(Orders(), broken=bug, nemeses=["pause"], duration=12, interval=6, **RUN)
    row, orders = first_wrong(result)
    # the table holds the order's amount rounded to a double's 15-17 digits
    [order] = [o for _, o in orders if same_order(row, o)][-1:]
    amount = decimal.Decimal(str(row["amount"]))
    assert amount != order["amount"] and float(amount) == float(order["amount"]), (row, order)


def test_the_order_placed_last_winning_is_caught_at_its_batch_and_key(sealcheck) -> None:
    bug = "newest-by-event-time"
    result = sealcheck(Orders(), broken=bug, nemeses=["pause"], duration=12, interval=6, **RUN)
    row, orders = first_wrong(result)
    # the table kept an order that a later record of the key replaced, placed before it
    [(at, kept)] = [(o, order) for o, order in orders if same_order(row, order)][-1:]
    assert any(o > at and order["placed"] < kept["placed"] for o, order in orders), row


def test_a_recorded_sample_of_the_topic_replays_as_the_workload(sealcheck) -> None:
    result = sealcheck(
        Orders(), nemeses=["kill"], duration=12, interval=6, **RUN,
        **{"workload.sample": str(SAMPLE)},
    )  # fmt: skip
    result.assert_valid()
    # the topic held the sample's values only: its amounts in cents, its keys
    topic = pq.read_table(result.run_dir / "topic.parquet").to_pylist()
    sample = {r["value"] for r in pq.read_table(SAMPLE).to_pylist()}
    assert topic and all(r["value"] in sample for r in topic)
    cents = decimal.Decimal("0.01")
    ours = [r["value"] for r in topic if r["value"] and r["value"][:5] == b"\x00\x00\x00\x00\x01"]
    decoded = [VALUES.decode(v) for v in ours]
    assert decoded and all(o["amount"] == o["amount"].quantize(cents) for o in decoded)
