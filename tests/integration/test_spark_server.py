"""The pipeline's Spark Connect server on the local backend: it serves Kafka reads to a thin
client, is started again when it died, and is gone after ``stop``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sealcheck.infra.local import LocalBackend
from sealcheck.systems.upsert_source.spark_server import SparkServer

pytestmark = pytest.mark.integration


_COUNT = """
import sys
from sealcheck_upsert_source.spark import remote_session
spark = remote_session(sys.argv[1])
frame = (
    spark.read.format("kafka")
    .option("kafka.bootstrap.servers", sys.argv[2])
    .option("subscribe", sys.argv[3])
    .option("startingOffsets", "earliest")
    .option("endingOffsets", "latest")
    .load()
)
print(frame.count())
spark.stop()
"""


def _count(url: str, bootstrap: str, topic: str) -> int:
    """Records the server reads, asked by a thin client in its own process (as the pipeline
    is): this test process may already hold a classic Spark session, and PySpark allows one
    kind per process."""
    out = subprocess.run(
        [sys.executable, "-c", _COUNT, url, bootstrap, topic],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return int(out.stdout.strip().splitlines()[-1])


def test_server_serves_restarts_when_dead_and_stops(kafka: Any, tmp_path: Path) -> None:
    from sealcheck.harness.cli.smoke import produce

    topic = "spark-server"
    kafka.create_topic(topic, partitions=2)
    acked = produce(kafka.bootstrap, topic, [(b"k%d" % i, b"v") for i in range(25)])
    assert len(acked) == 25
    server = SparkServer(LocalBackend(1, tmp_path), tmp_path)
    try:
        server.ensure()
        assert server.starts == 1 and server.url.startswith("sc://127.0.0.1:")
        assert _count(server.url, kafka.bootstrap, topic) == 25
        server.ensure()  # running: nothing to do
        assert server.starts == 1
        assert server.node is not None
        node = server.node
        assert node.kill() is not None  # a dead server is started again before the next one
        assert node.wait_exit() == -9
        server.ensure()
        assert server.starts == 2 and server.node.alive
        assert _count(server.url, kafka.bootstrap, topic) == 25
    finally:
        server.stop()
    assert server.node is not None and not server.node.alive
