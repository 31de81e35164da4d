"""Dump a whole topic with confluent-kafka: the input log the checkers replay."""

from __future__ import annotations

import time
from pathlib import Path

from confluent_kafka import Consumer, TopicPartition

from checkers.model import TopicRecord


def _raw(data: str | bytes | None) -> bytes | None:
    return data.encode() if isinstance(data, str) else data


def log_end(bootstrap: str, topic: str, timeout_s: float = 10.0) -> dict[int, int]:
    """High watermark per partition."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "sealcheck-dump"})
    try:
        meta = consumer.list_topics(topic, timeout=timeout_s).topics[topic]
        return {
            p: int(consumer.get_watermark_offsets(TopicPartition(topic, p), timeout_s)[1])
            for p in sorted(meta.partitions)
        }
    finally:
        consumer.close()


def dump_topic(bootstrap: str, topic: str, timeout_s: float = 60.0) -> list[TopicRecord]:
    """Every record of ``topic`` from offset 0 to the current log end, in (partition, offset)."""
    ends = log_end(bootstrap, topic)
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "sealcheck-dump",
            "enable.auto.commit": False,
            "enable.partition.eof": False,
        }
    )
    out: list[TopicRecord] = []
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p, end in ends.items() if end > 0])
        remaining = {p: end for p, end in ends.items() if end > 0}
        deadline = time.monotonic() + timeout_s
        while remaining:
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"dumping {topic!r}: not complete after {timeout_s}s; "
                    f"still reading partitions up to {remaining}"
                )
            batch = consumer.consume(10_000, timeout=0.5)
            for msg in batch:
                if msg.error() is not None:
                    raise RuntimeError(f"dumping {topic!r}: {msg.error()}")
                p, o = msg.partition(), msg.offset()
                assert p is not None and o is not None
                if p in remaining and o < remaining[p]:
                    key, value = msg.key(), msg.value()
                    out.append(
                        TopicRecord(
                            p,
                            o,
                            key if isinstance(key, bytes | None) else key.encode(),
                            value if isinstance(value, bytes | None) else value.encode(),
                        )
                    )
                    if o + 1 >= remaining[p]:
                        del remaining[p]
    finally:
        consumer.close()
    out.sort(key=lambda r: (r.partition, r.offset))
    return out


def write_parquet(records: list[TopicRecord], path: Path) -> None:
    """Write a topic dump as the checkers read it (``topic.parquet``)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table(
        {
            "partition": pa.array([r.partition for r in records], pa.int64()),
            "offset": pa.array([r.offset for r in records], pa.int64()),
            "key": pa.array([r.key for r in records], pa.binary()),
            "value": pa.array([r.value for r in records], pa.binary()),
        }
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)


def copy_sqlite_store(src: Path, dst: Path) -> None:
    """A consistent copy of a SQLite persist store (the online backup API, safe while live),
    left in rollback-journal mode so that reading it never creates or needs a WAL beside it
    (its bytes, which the history records, are all there is)."""
    import sqlite3

    dst.parent.mkdir(parents=True, exist_ok=True)
    source, target = sqlite3.connect(src), sqlite3.connect(dst)
    try:
        source.backup(target)
        target.execute("PRAGMA journal_mode=DELETE")
    finally:
        source.close()
        target.close()
