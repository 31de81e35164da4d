"""Where a step's records come from: log ends via confluent-kafka, ranges via Spark.

:class:`Source` is the small interface the step loop needs; :class:`KafkaSparkSource` is the
real one: it asks Kafka for high watermarks and reads an exact offset range with Spark's Kafka
*batch* reader (``assign`` + ``startingOffsets``/``endingOffsets`` JSON), the range's records
back as one Arrow table; :func:`winners_table` keeps per raw key the record with the highest
``(offset, partition)`` (null keys: per partition), column-wise, before any Python record is
built.

Why the winners are chosen in the client and not in Spark: a ``groupBy`` in Spark adds a
shuffle stage to every step's job, which cost more than sending every record of the range as
Arrow (``bench/step_parts.py``, ``docs/scale.md``, issue 28).
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from confluent_kafka import Consumer, TopicPartition

from sealcheck_upsert_source.upsert import SourceRecord


class SourceUnavailable(RuntimeError):
    """Kafka could not be asked (broker down, partitioned, paused); retry later."""


class Source(Protocol):
    """What the step loop reads from."""

    def log_end(self) -> dict[int, int]:
        """Per partition, the next offset Kafka will assign (the high watermark)."""

    def read_winners(self, start: dict[int, int], end: dict[int, int]) -> list[SourceRecord]:
        """The winning record per raw key among offsets ``[start[p], end[p])``."""

    def close(self) -> None:
        """Release clients."""


class KafkaSparkSource:
    """The real source: confluent-kafka for watermarks, Spark for the data."""

    def __init__(self, bootstrap: str, topic: str, spark: Any, timeout_s: float = 10.0) -> None:
        self.bootstrap, self.topic, self.spark, self.timeout_s = bootstrap, topic, spark, timeout_s
        self._consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": "sealcheck-upsert-source-watermarks",
                "enable.auto.commit": False,
                "log_level": 0,
            }
        )

    def log_end(self) -> dict[int, int]:
        """High watermark per partition; :class:`SourceUnavailable` if Kafka does not answer."""
        try:
            meta = self._consumer.list_topics(self.topic, timeout=self.timeout_s)
            topic = meta.topics.get(self.topic)
            if topic is None or topic.error is not None or not topic.partitions:
                raise SourceUnavailable(
                    f"topic {self.topic!r} has no metadata: {topic and topic.error}"
                )
            ends = {}
            for p in sorted(topic.partitions):
                _, high = self._consumer.get_watermark_offsets(
                    TopicPartition(self.topic, p), timeout=self.timeout_s, cached=False
                )
                ends[p] = int(high)
            return ends
        except SourceUnavailable:
            raise
        except Exception as exc:  # KafkaException and timeouts: the broker is unreachable
            raise SourceUnavailable(f"log end of {self.topic!r}: {exc}") from exc

    def read_winners(self, start: dict[int, int], end: dict[int, int]) -> list[SourceRecord]:
        """Read exactly the range with Spark and keep each raw key's winning record."""
        parts = sorted(p for p in end if end[p] > start.get(p, 0))
        if not parts:
            return []
        frame = self.range_frame(start, end).select("key", "partition", "offset", "value")
        try:
            table = frame.toArrow()
        except Exception as exc:  # Py4JJavaError and friends: Kafka went away mid-read
            raise SourceUnavailable(f"Spark read of {parts} failed: {str(exc)[:500]}") from exc
        return decode(winners_table(table))

    def range_frame(self, start: dict[int, int], end: dict[int, int]) -> Any:
        """The Spark DataFrame of exactly the records in ``[start, end)`` (the partitions
        where the range is not empty; at least one must be)."""
        parts = sorted(p for p in end if end[p] > start.get(p, 0))
        return (
            self.spark.read.format("kafka")
            .option("kafka.bootstrap.servers", self.bootstrap)
            .option("assign", json.dumps({self.topic: parts}))
            .option(
                "startingOffsets",
                json.dumps({self.topic: {str(p): start.get(p, 0) for p in parts}}),
            )
            .option("endingOffsets", json.dumps({self.topic: {str(p): end[p] for p in parts}}))
            .option("failOnDataLoss", "true")
            # a step reads up to the log end, where a fetch waits fetch.max.wait.ms (500 ms)
            # for data that is not there: ~1 s of every step (bench/step_parts.py, issue 28)
            .option("kafka.fetch.max.wait.ms", "10")
            .option("kafkaConsumer.pollTimeoutMs", "10000")
            .option("fetchOffset.numRetries", "3")
            .load()
        )

    def close(self) -> None:
        """Close the watermark consumer."""
        self._consumer.close()


def winners_table(table: Any) -> Any:
    """Each raw key's winning record of the Arrow ``table`` (``key, partition, offset,
    value``): the highest ``(offset, partition)`` per raw key, null keys one slot per partition
    (see :mod:`sealcheck_upsert_source.upsert`). Column-wise: a sort, then the first row of
    each slot."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if table.num_rows == 0:
        return table
    partition = table["partition"].cast(pa.int64())
    null_key = pc.is_null(table["key"])
    slot = pa.table(
        {
            # a null key and an empty key differ by their slot: the partition, or -1
            "k": pc.fill_null(table["key"], b""),
            "s": pc.if_else(null_key, partition, pa.scalar(-1, pa.int64())),
            "o": table["offset"],
            "p": partition,
        }
    )
    order = pc.sort_indices(
        slot, [("k", "ascending"), ("s", "ascending"), ("o", "descending"), ("p", "descending")]
    )
    ranked = slot.take(order)
    k, s = ranked["k"].combine_chunks(), ranked["s"].combine_chunks()
    n = len(k)
    new_slot = pc.or_(
        pc.not_equal(k.slice(1), k.slice(0, n - 1)), pc.not_equal(s.slice(1), s.slice(0, n - 1))
    )
    first = pa.concat_arrays([pa.array([True]), new_slot])
    return table.take(pc.filter(order, first))


def decode(table: Any) -> list[SourceRecord]:
    """The winners' Arrow table as records."""
    cols = table.to_pydict()  # Arrow's integers are Python ints here
    return list(map(SourceRecord, cols["partition"], cols["offset"], cols["key"], cols["value"]))
