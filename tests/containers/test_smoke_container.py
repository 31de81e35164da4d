"""A Kafka broker in a container from the locally built image, via testcontainers."""

from __future__ import annotations

import random
from typing import Any

import docker
import pytest

from sealcheck.harness.cli import smoke
from sealcheck.harness.run.workload import PLAIN, upsert_records
from sealcheck.infra.containers.kafka import RUN_LABEL, KafkaContainer
from sealcheck.infra.kafka_admin import create_topic

pytestmark = pytest.mark.containers


def _labelled(run_id: str) -> list[Any]:
    client = docker.from_env()
    try:
        return list(client.containers.list(all=True, filters={"label": f"{RUN_LABEL}={run_id}"}))
    finally:
        client.close()


def test_kafka_container_round_trip_and_nothing_left_behind(kafka_image: str, spark: Any) -> None:
    run_id = "pytest-smoke"
    with KafkaContainer(kafka_image, run_id) as box:
        assert len(_labelled(run_id)) == 1
        create_topic(box.bootstrap, "boxed", 2, 1)
        pairs = upsert_records(random.Random(3), 2_000, PLAIN)
        acked = smoke.produce(box.bootstrap, "boxed", pairs)
        ends = smoke.end_offsets(acked)
        got = smoke.read_range(spark, box.bootstrap, "boxed", {p: 0 for p in ends}, ends)
        assert got == sorted(acked)
    assert _labelled(run_id) == []
