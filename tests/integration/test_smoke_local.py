"""Real Kafka (local KRaft processes) and real Spark talk to each other and stop cleanly."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from sealcheck.harness.cli import smoke
from sealcheck.harness.run.workload import PLAIN, upsert_records
from sealcheck.infra import procs
from sealcheck.infra.kafka_local import KafkaCluster

pytestmark = pytest.mark.integration


def test_10000_records_round_trip_through_spark_batch_reader(kafka: Any, spark: Any) -> None:
    kafka.create_topic("smoke", partitions=3)
    pairs = upsert_records(random.Random(42), 10_000, PLAIN)
    acked = smoke.produce(kafka.bootstrap, "smoke", pairs)
    assert len(acked) == 10_000
    ends = smoke.end_offsets(acked)
    assert sum(ends.values()) == 10_000

    got = smoke.read_range(spark, kafka.bootstrap, "smoke", {p: 0 for p in ends}, ends)
    assert got == sorted(acked)
    assert sorted((r.key, r.value) for r in got) == sorted(pairs)


def test_explicit_offset_range_reads_exactly_that_slice(kafka: Any, spark: Any) -> None:
    kafka.create_topic("slice", partitions=1)
    acked = smoke.produce(kafka.bootstrap, "slice", [(b"k", str(i).encode()) for i in range(100)])
    got = smoke.read_range(spark, kafka.bootstrap, "slice", {0: 10}, {0: 25})
    assert [r.offset for r in got] == list(range(10, 25))
    assert got == sorted(acked)[10:25]


def _state(node: Any) -> str:
    return procs.proc_state(node.proc.pid)


@pytest.mark.nightly  # CI runs three brokers in containers (tests/containers/)
def test_three_brokers_survive_one_kill_and_a_pause(tmp_path: Path) -> None:
    with KafkaCluster(tmp_path, size=3, heap_mb=384) as cluster:
        cluster.create_topic("rf3", partitions=2)
        before = smoke.produce(cluster.bootstrap, "rf3", [(b"a", b"1")] * 100)

        victim = cluster.nodes[2]
        victim.kill()
        assert not victim.running
        during = smoke.produce(cluster.bootstrap, "rf3", [(b"b", b"2")] * 100)
        assert len(during) == 100  # min.insync.replicas=2 still met by the other two

        victim.start()
        cluster.wait_ready()
        assert victim.running

        paused = cluster.nodes[0]
        paused.pause()
        assert _state(paused) == "T"
        paused.resume()
        assert _state(paused) in {"S", "R"}
        after = smoke.produce(cluster.bootstrap, "rf3", [(b"c", b"3")] * 10)
        assert len(before) + len(during) + len(after) == 210
    assert all(not n.running for n in cluster.nodes)


def test_single_broker_stops_acknowledging_while_paused(kafka: Any) -> None:
    kafka.create_topic("paused", partitions=1)
    node = kafka.nodes[0]
    producer = Producer(
        {
            "bootstrap.servers": kafka.bootstrap,
            "acks": "all",
            "message.timeout.ms": 3000,
            "log_level": 0,
        }
    )
    outcomes: list[object] = []
    node.pause()
    try:
        producer.produce("paused", b"v", key=b"k", on_delivery=lambda e, m: outcomes.append(e))
        producer.flush(6)
    finally:
        node.resume()
    assert len(outcomes) == 1 and outcomes[0] is not None  # timed out, not acknowledged
    kafka.wait_ready()
    assert len(smoke.produce(kafka.bootstrap, "paused", [(b"k", b"w")])) == 1
