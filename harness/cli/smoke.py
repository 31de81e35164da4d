"""The smoke round trip: produce records with confluent-kafka, read them back with Spark.

Used by ``sealcheck demo`` and by the smoke tests, against local or containerised Kafka.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from sealcheck.rundir.files import TopicRecord


def _as_bytes(data: str | bytes | None) -> bytes | None:
    return data.encode() if isinstance(data, str) else data


def produce(
    bootstrap: str, topic: str, pairs: Iterable[tuple[bytes | None, bytes | None]]
) -> list[TopicRecord]:
    """Produce every pair (acks=all, idempotent) and return the acknowledged records.

    Raises :class:`KafkaException` with the first delivery error, after flushing the rest.
    """
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 5,
            "compression.type": "none",
        }
    )
    acked: list[TopicRecord] = []
    errors: list[KafkaError] = []

    def on_delivery(err: KafkaError | None, msg: Message) -> None:
        if err is not None:
            errors.append(err)
        else:
            partition, offset = msg.partition(), msg.offset()
            assert partition is not None and offset is not None  # set on every delivered message
            key, value = msg.key(), msg.value()
            acked.append(TopicRecord(partition, offset, _as_bytes(key), _as_bytes(value)))

    for key, value in pairs:
        while True:
            try:
                producer.produce(topic, key=key, value=value, on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.1)
        producer.poll(0)
    remaining = producer.flush(60)
    if errors:
        raise KafkaException(errors[0])
    if remaining:
        raise TimeoutError(f"{remaining} records still unacknowledged after 60s")
    return acked


def offsets_json(topic: str, offsets: dict[int, int]) -> str:
    """Spark's ``startingOffsets``/``endingOffsets`` JSON for explicit per-partition offsets."""
    return json.dumps({topic: {str(p): o for p, o in sorted(offsets.items())}})


def read_range(
    spark: Any, bootstrap: str, topic: str, start: dict[int, int], end: dict[int, int]
) -> list[TopicRecord]:
    """Read exactly ``[start, end)`` per partition with Spark's Kafka *batch* reader."""
    frame = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", offsets_json(topic, start))
        .option("endingOffsets", offsets_json(topic, end))
        .option("failOnDataLoss", "true")
        .load()
        .select("partition", "offset", "key", "value")
    )
    rows: Sequence[Any] = frame.collect()
    return sorted(
        TopicRecord(
            int(r.partition),
            int(r.offset),
            bytes(r.key) if r.key is not None else None,
            bytes(r.value) if r.value is not None else None,
        )
        for r in rows
    )


def end_offsets(acked: Iterable[TopicRecord]) -> dict[int, int]:
    """Per partition, one past the highest acknowledged offset."""
    ends: dict[int, int] = {}
    for rec in acked:
        ends[rec.partition] = max(ends.get(rec.partition, 0), rec.offset + 1)
    return ends
