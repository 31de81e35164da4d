"""Read a whole topic with confluent-kafka (the input log the checkers replay) and the log
end of each partition."""

from __future__ import annotations

import time

from confluent_kafka import Consumer, TopicPartition

from sealcheck.rundir.files import TopicRecord


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
