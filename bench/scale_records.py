"""The seeded records of ``bench/scale.py`` and ``bench/topic_dump.py``, and their producer.

Upserts with tombstones, null keys and values that are not JSON or not UTF-8; the producer
pairs each record with its offset and the time it was acknowledged."""

from __future__ import annotations

import collections
import time
from typing import Any

import numpy as np
import polars as pl

TOPIC = "scale"
PARTITIONS = 3
GOOD, TOMBSTONE, NULL_KEY, NOT_JSON, NOT_UTF8 = range(5)


def workload(records: int, keys: int, seed: int) -> pl.DataFrame:
    """The records: ``n, kind, partition`` and ``key``/``value`` as text (``key_s``,
    ``value_s``; ``value_hex`` for a value that is not UTF-8) and as bytes."""
    rng = np.random.default_rng(seed)
    kid = rng.integers(0, keys, records)
    roll = rng.random(records)
    kind = np.select(
        [roll < 0.05, roll < 0.05 + 0.02 / 3, roll < 0.05 + 0.04 / 3, roll < 0.07],
        [TOMBSTONE, NULL_KEY, NOT_JSON, NOT_UTF8],
        GOOD,
    )
    part = np.where(kind == NULL_KEY, rng.integers(0, PARTITIONS, records), kid % PARTITIONS)
    n, k = pl.col("n").cast(pl.String), pl.col("kind")
    frame = pl.DataFrame({"n": np.arange(records), "kid": kid, "kind": kind, "partition": part})
    return frame.with_columns(
        pl.when(k != NULL_KEY).then(pl.lit("k") + pl.col("kid").cast(pl.String)).alias("key_s"),
        pl.when(k == GOOD)
        .then(pl.lit('{"i": ') + n + pl.lit(', "p": "xxxxxxxxxxxxxxxx"}'))
        .when(k == NULL_KEY)
        .then(pl.lit('{"i": ') + n + pl.lit("}"))
        .when(k == NOT_JSON)
        .then(pl.lit("{not json ") + n)
        .alias("value_s"),
        pl.when(k == NOT_UTF8).then(pl.lit("fffe") + n.str.encode("hex")).alias("value_hex"),
    ).with_columns(
        pl.col("key_s").cast(pl.Binary).alias("key"),
        pl.coalesce(pl.col("value_s").cast(pl.Binary), pl.col("value_hex").str.decode("hex")).alias(
            "value"
        ),
    )


def produce(bootstrap: str, frame: pl.DataFrame, t0_ns: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Produce every record; per record its offset (-1: not acknowledged) and the time of its
    acknowledgement (ns since ``t0_ns``), and how many failed. Delivery reports of a partition
    come in the order its records were produced (idempotence), which pairs them up."""
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 20,
            "compression.type": "none",
            "queue.buffering.max.messages": 500_000,
        }
    )
    offsets = np.full(frame.height, -1, np.int64)
    acked = np.zeros(frame.height, np.int64)
    pending: list[collections.deque[int]] = [collections.deque() for _ in range(PARTITIONS)]
    failed = 0

    def on_delivery(err: Any, msg: Any) -> None:
        nonlocal failed
        i = pending[msg.partition()].popleft()
        if err is not None:
            failed += 1
        else:
            offsets[i] = msg.offset()
            acked[i] = time.monotonic_ns() - t0_ns

    for chunk in frame.select("n", "partition", "key", "value").iter_slices(200_000):
        for i, p, key, value in chunk.iter_rows():
            pending[p].append(i)
            while True:
                try:
                    producer.produce(TOPIC, value, key, p, on_delivery=on_delivery)
                    break
                except BufferError:
                    producer.poll(0.05)
        producer.poll(0)
    left = producer.flush(300)
    return offsets, acked, failed + left
