"""Read a whole topic with confluent-kafka (the input log the checkers replay) and the log
end of each partition.

:func:`read_topic` is the one reader: it consumes every partition at once, keeps each
partition's records as Arrow chunks (at most the last ``_CHUNK`` of a partition are Python
objects at any time) and fetches 16 MiB per partition at a time. With librdkafka's 1 MiB
default a bare consumer read 2M records in 13.2 s here, with 16 MiB in 3.9 s; the dump as a
whole went from 18.6 s to 7.3 s side by side (``bench/topic_dump.py``, ``docs/scale.md``).
It gives up only when nothing arrives for ``stall_s``, so a large topic takes as long as it
needs and a dead broker fails in ``stall_s``; and it refuses an offset no longer in the log
rather than return less than the whole log."""

from __future__ import annotations

import time
from collections.abc import Mapping
from types import MappingProxyType

import numpy as np
import pyarrow as pa
from confluent_kafka import Consumer, KafkaError, TopicPartition

from sealcheck.rundir.files import TOPIC_COLUMNS, TopicRecord, headers_column, topic_records

#: librdkafka's fetch sizes for reading a whole topic (its defaults: 1 MiB, 50 MiB); the
#: benches' bare consumers use them too, so that they are the fastest peer, not a handicapped one
FETCH: Mapping[str, int] = MappingProxyType(
    {"max.partition.fetch.bytes": 16 << 20, "fetch.max.bytes": 64 << 20}
)
#: records of one partition kept as Python objects before they become an Arrow chunk
_CHUNK = 200_000


def log_end(bootstrap: str, topic: str, timeout_s: float = 10.0) -> dict[int, int]:
    """High watermark per partition."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"sealcheck-dump-{topic}"})
    try:
        meta = consumer.list_topics(topic, timeout=timeout_s).topics[topic]
        return {
            p: int(consumer.get_watermark_offsets(TopicPartition(topic, p), timeout_s)[1])
            for p in sorted(meta.partitions)
        }
    finally:
        consumer.close()


class _Partition:
    """What has been read of one partition below its ``end``: Arrow chunks and the lists
    filling the next one."""

    def __init__(self, end: int) -> None:
        self.end, self.next = end, 0
        self.offsets: list[int] = []
        self.keys: list[bytes | None] = []
        self.values: list[bytes | None] = []
        self.headers: list[list[tuple[str, bytes]] | None] = []
        self.chunks: list[tuple[pa.Array, pa.Array, pa.Array, pa.Array]] = []

    def seal_chunk(self) -> None:
        """The lists into one more Arrow chunk."""
        if self.offsets:
            self.chunks.append(
                (
                    pa.array(self.offsets, pa.int64()),
                    pa.array(self.keys, pa.binary()),
                    pa.array(self.values, pa.binary()),
                    headers_column(self.headers),
                )
            )
            self.offsets, self.keys, self.values, self.headers = [], [], [], []

    def batches(self, partition: int) -> list[pa.RecordBatch]:
        """The chunks as record batches of :data:`TOPIC_COLUMNS`."""
        self.seal_chunk()
        return [
            pa.RecordBatch.from_arrays(
                [pa.array(np.full(len(o), partition, np.int64)), o, k, v, h], schema=TOPIC_COLUMNS
            )
            for o, k, v, h in self.chunks
        ]


def read_topic(
    bootstrap: str, topic: str, ends: Mapping[int, int] | None = None, stall_s: float = 60.0
) -> pa.Table:
    """Every record of ``topic`` below ``ends`` (partition: offset; by default the log end
    now) in :data:`~sealcheck.rundir.files.TOPIC_COLUMNS`, in (partition, offset) order.

    A partition is read once its record at ``end - 1`` arrived, or the consumer reached its
    end at or past ``end`` (offsets that hold no record, such as transaction markers, are
    skipped that way). Raises :class:`TimeoutError` naming the partitions still short when
    nothing arrives for ``stall_s`` seconds, and :class:`RuntimeError` on a consumer error,
    including an offset to read that is no longer in the log (a partition whose first records
    were deleted is refused, not read from where it now starts)."""
    want = dict(log_end(bootstrap, topic) if ends is None else ends)
    parts = {p: _Partition(end) for p, end in sorted(want.items()) if end > 0}
    short = dict(parts)
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"sealcheck-dump-{topic}",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "auto.offset.reset": "error",  # offset 0 deleted: an error, never a silent skip
            **FETCH,
        }
    )
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in parts])
        moved = time.monotonic()
        while short:
            batch = consumer.consume(10_000, timeout=0.5)
            if batch:
                moved = time.monotonic()
            elif time.monotonic() - moved > stall_s:
                left = ", ".join(f"{p}: {s.next} of {s.end}" for p, s in short.items())
                raise TimeoutError(
                    f"reading {topic!r}: nothing arrived for {stall_s:g}s with partitions "
                    f"still short of their log end (partition: next offset of end: {left})"
                )
            for msg in batch:
                p, o = msg.partition(), msg.offset()
                assert p is not None and o is not None
                s = short.get(p)
                err = msg.error()
                if err is not None:
                    if err.code() == KafkaError._AUTO_OFFSET_RESET:
                        at = s.next if s is not None else 0
                        raise RuntimeError(
                            f"reading {topic!r}: offset {at} of partition {p} is no longer in "
                            f"the log (deleted by retention or delete_records, or the log was "
                            f"truncated): the dump would not be the whole log ({err})"
                        )
                    if err.code() != KafkaError._PARTITION_EOF:
                        raise RuntimeError(f"reading {topic!r}: {err}")
                    if s is not None and o >= s.end:  # the end, past offsets without records
                        _done(consumer, topic, short, p)
                    continue
                if s is None or o < s.next:
                    continue  # a partition already read, or a record seen before
                if o >= s.end:
                    _done(consumer, topic, short, p)
                    continue
                s.offsets.append(o)
                s.keys.append(msg.key())
                s.values.append(msg.value())
                s.headers.append(msg.headers())  # type: ignore[arg-type]
                s.next = o + 1
                if s.next >= s.end:
                    _done(consumer, topic, short, p)
                elif len(s.offsets) >= _CHUNK:
                    s.seal_chunk()
    finally:
        consumer.close()
    batches = [b for p, s in parts.items() for b in s.batches(p)]
    return pa.Table.from_batches(batches, schema=TOPIC_COLUMNS)


def _done(consumer: Consumer, topic: str, short: dict[int, _Partition], p: int) -> None:
    """Partition ``p`` is read: stop waiting for it and stop fetching it (records past its
    end would only be thrown away)."""
    del short[p]
    consumer.pause([TopicPartition(topic, p)])


def dump_topic(bootstrap: str, topic: str, stall_s: float = 60.0) -> list[TopicRecord]:
    """Every record of ``topic`` from offset 0 to the current log end, in (partition, offset),
    as Python records (for small topics; :func:`read_topic` keeps them column-wise)."""
    return topic_records(read_topic(bootstrap, topic, stall_s=stall_s))
