"""The smoke demo: real Kafka and real Spark, start to finish, with timings.

Starts Kafka (local processes, or a container), produces seeded records, reads them back
with Spark's Kafka batch reader over explicit offsets, and says whether they all came back.
"""

from __future__ import annotations

import random
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sealcheck.harness.cli import smoke
from sealcheck.harness.run.workload import PLAIN, upsert_records
from sealcheck.infra.kafka_admin import create_topic


@dataclass
class DemoResult:
    """What the demo measured; ``ok`` is true when every acknowledged record came back."""

    ok: bool
    produced: int
    read_back: int
    timings: dict[str, float] = field(default_factory=dict)


def _timed(timings: dict[str, float], name: str, fn: Callable[[], object]) -> object:
    start = time.monotonic()
    result = fn()
    timings[name] = time.monotonic() - start
    return result


def _broker(backend: str, directory: Path, seed: int, timings: dict[str, float]) -> Any:
    """An unstarted single broker for ``backend`` with ``start``/``stop``/``bootstrap``."""
    if backend == "local":
        from sealcheck.infra.kafka_local import KafkaCluster

        return KafkaCluster(directory / "kafka")
    from sealcheck.infra.containers.images import kafka_image
    from sealcheck.infra.containers.kafka import KafkaContainer

    image = str(_timed(timings, "image_s", kafka_image))
    return KafkaContainer(image, run_id=f"demo-{seed}")


def run_demo(records: int, partitions: int, seed: int, backend: str) -> DemoResult:
    """Run the round trip on ``backend`` (``local`` or ``containers``)."""
    from sealcheck.infra.jars import spark_connector_jars
    from sealcheck_upsert_source.spark import spark_session

    jars = [str(p) for p in spark_connector_jars()]

    timings: dict[str, float] = {}
    topic = "sealcheck-demo"
    pairs = upsert_records(random.Random(seed), records, PLAIN)
    with tempfile.TemporaryDirectory(prefix="sealcheck-demo-") as tmp:
        broker = _broker(backend, Path(tmp), seed, timings)
        try:
            _timed(timings, "kafka_start_s", broker.start)
            bootstrap = broker.bootstrap
            create_topic(bootstrap, topic, partitions, 1)
            acked = _timed(timings, "produce_s", lambda: smoke.produce(bootstrap, topic, pairs))
            assert isinstance(acked, list)
            spark = _timed(timings, "spark_start_s", lambda: spark_session(jars, "sealcheck-demo"))
            ends = smoke.end_offsets(acked)
            starts = {p: 0 for p in ends}
            got = _timed(
                timings,
                "spark_read_s",
                lambda: smoke.read_range(spark, bootstrap, topic, starts, ends),
            )
            spark.stop()  # type: ignore[attr-defined]
        finally:
            broker.stop()
    assert isinstance(got, list)
    return DemoResult(got == sorted(acked), len(acked), len(got), timings)
