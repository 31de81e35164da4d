"""``sealcheck.infra.topic.read_topic`` on a real broker: every record below the ends in
(partition, offset) order, a partition that ends on a transaction marker, a stall, and a
partition whose first records were deleted."""

from __future__ import annotations

import itertools
import time
from typing import Any

import pytest
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from sealcheck.harness.cli import smoke
from sealcheck.infra import topic as topic_mod
from sealcheck.infra.topic import dump_topic, log_end, read_topic
from sealcheck.rundir.files import TopicRecord, topic_records

pytestmark = pytest.mark.integration

_topics = itertools.count()


def _records(n: int) -> list[tuple[bytes | None, bytes | None]]:
    """Keys spread over the partitions, a null key and a tombstone among them."""
    out: list[tuple[bytes | None, bytes | None]] = []
    for i in range(n):
        key = None if i % 97 == 5 else b"k%d" % (i % 41)
        out.append((key, None if i % 13 == 7 else b'{"i": %d}' % i))
    return out


def test_every_record_below_the_ends_in_partition_and_offset_order(
    kafka: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    topic = f"dump-{next(_topics)}"
    kafka.create_topic(topic, partitions=3)
    acked = sorted(smoke.produce(kafka.bootstrap, topic, _records(3_000)))
    monkeypatch.setattr(topic_mod, "_CHUNK", 64)  # many Arrow chunks per partition

    table = read_topic(kafka.bootstrap, topic)
    assert table.column("offset").num_chunks > 3
    got = topic_records(table)
    assert got == acked
    assert dump_topic(kafka.bootstrap, topic) == acked
    assert any(r.key is None for r in got) and any(r.value is None for r in got)

    ends = log_end(kafka.bootstrap, topic)
    cut = {2: ends[2], 1: 0, 0: ends[0] // 2}  # half of one, none of another; out of order
    want = [r for r in acked if r.offset < cut[r.partition]]
    assert topic_records(read_topic(kafka.bootstrap, topic, cut)) == want


def test_a_partition_ending_on_a_transaction_marker_is_read_to_its_end(kafka: Any) -> None:
    # The marker holds the last offset but is never delivered: the end is known from the
    # consumer reaching it, not from a record at end - 1 (which would wait for ever).
    topic = f"dump-tx-{next(_topics)}"
    kafka.create_topic(topic, partitions=1)
    producer = Producer({"bootstrap.servers": kafka.bootstrap, "transactional.id": topic})
    producer.init_transactions(30)
    producer.begin_transaction()
    for i in range(5):
        producer.produce(topic, b'{"i": %d}' % i, b"k%d" % i, 0)
    producer.commit_transaction(30)
    # The commit returns before the coordinator has written the marker; until it has, the end
    # a read_committed consumer sees (the last stable offset) is still 0. Waited for, bounded.
    deadline = time.monotonic() + 60
    while (ends := log_end(kafka.bootstrap, topic)) != {0: 6} and time.monotonic() < deadline:
        time.sleep(0.1)
    assert ends == {0: 6}  # five records and the commit marker

    got = topic_records(read_topic(kafka.bootstrap, topic, stall_s=20))
    assert got == [TopicRecord(0, i, b"k%d" % i, b'{"i": %d}' % i) for i in range(5)]


def test_a_partition_that_never_reaches_its_end_fails_naming_it(kafka: Any) -> None:
    topic = f"dump-short-{next(_topics)}"
    kafka.create_topic(topic, partitions=2)
    smoke.produce(kafka.bootstrap, topic, [(b"a", b"1")] * 4)
    ends = log_end(kafka.bootstrap, topic)
    full = next(p for p, e in ends.items() if e == 4)
    start = time.monotonic()
    with pytest.raises(TimeoutError) as err:
        read_topic(kafka.bootstrap, topic, {full: 10}, stall_s=5)
    assert time.monotonic() - start >= 5
    assert f"{full}: 4 of 10" in str(err.value)


def test_a_partition_whose_first_records_were_deleted_is_refused(kafka: Any) -> None:
    # Read from where it now starts, the dump would lack records the system may have read.
    topic = f"dump-deleted-{next(_topics)}"
    kafka.create_topic(topic, partitions=1)
    smoke.produce(kafka.bootstrap, topic, [(b"a", b"%d" % i) for i in range(10)])
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    for future in admin.delete_records([TopicPartition(topic, 0, 6)]).values():
        future.result(30)
    with pytest.raises(RuntimeError, match="offset 0 of partition 0 is no longer in the log"):
        read_topic(kafka.bootstrap, topic, stall_s=20)
