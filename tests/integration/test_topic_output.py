"""A job's output in Kafka topics of upserts (:class:`sealcheck.TopicOutput`) on a real
broker: the harness takes the topics' log ends as states only between the job's batches (told
by a checkpoint's ``offsets/N`` and ``commits/N``), reads the topics once at the export, and
each state is the upsert of every record below its log ends. The job is played by a producer
and a hand-written checkpoint, so the test says exactly which prefixes are states."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from confluent_kafka import Producer

from sealcheck.core.windows import streaming_windows
from sealcheck.systems.job_checkpoint import batch_boundary
from sealcheck.systems.outputs import TopicOutput
from sealcheck.systems.outputs.sql import OutputError

pytestmark = pytest.mark.integration


def test_topic_states_are_taken_between_batches_and_read_at_the_export(
    kafka: Any, tmp_path: Path
) -> None:
    kafka.create_topic("accounts-out", partitions=2)
    kafka.create_topic("dead-out", partitions=1)
    cp = tmp_path / "checkpoint"
    for d in ("offsets", "commits"):
        (cp / d).mkdir(parents=True)
    windows = tuple(streaming_windows("checkpoint").values())
    out = TopicOutput(kafka.bootstrap, "accounts-out", errors="dead-out", exclude=("at",))
    out.watch_batches(lambda: batch_boundary(tmp_path, windows))
    producer = Producer({"bootstrap.servers": kafka.bootstrap})

    def write(topic: str, key: str, doc: dict[str, Any] | None, partition: int = 0) -> None:
        value = json.dumps(doc).encode() if doc is not None else None
        producer.produce(topic, value, key.encode(), partition=partition)
        producer.flush(10)

    (cp / "offsets" / "0").touch()  # batch 0 planned: in flight
    write("accounts-out", "a", {"v": 1, "at": "t0"})
    assert out.uppers() is None  # half a batch is no state
    write("accounts-out", "b", {"v": 1, "at": "t0"}, partition=1)
    write("dead-out", "0:3", {"why": "not JSON"})
    (cp / "commits" / "0").touch()
    assert out.uppers() == {"data": 1, "errors": 1}
    (cp / "offsets" / "1").touch()
    write("accounts-out", "a", {"v": 2, "at": "t1"})
    write("accounts-out", "b", None, partition=1)  # a tombstone
    assert out.uppers() == {"data": 1, "errors": 1}
    (cp / "commits" / "1").touch()
    assert out.uppers() == {"data": 2, "errors": 2}
    assert out.uppers() == {"data": 2, "errors": 2}  # nothing moved: no new state
    out.export(tmp_path / "run")
    frontiers = json.loads((tmp_path / "run" / "export" / "frontiers.json").read_text())
    assert frontiers["bindings"]["kept"] is False and frontiers["data"]["upper"] == 2
    rows = pl.read_parquet(tmp_path / "run" / "export" / "updates.parquet").sort(
        "collection", "ts", "diff", "key"
    )
    assert rows.select("collection", "key", "value", "ts", "diff").rows() == [
        ("data", b"a", b'{"v":1}', 0, 1),
        ("data", b"b", b'{"v":1}', 0, 1),
        ("data", b"a", b'{"v":1}', 1, -1),
        ("data", b"b", b'{"v":1}', 1, -1),
        ("data", b"a", b'{"v":2}', 1, 1),
        ("errors", b"0:3", b'{"why":"not JSON"}', 0, 1),
    ]
    (cp / "offsets" / "2").touch()  # a batch in flight at the end: not judged as the last
    with pytest.raises(OutputError, match="a batch was in flight at the end"):
        out.export(tmp_path / "run2")
