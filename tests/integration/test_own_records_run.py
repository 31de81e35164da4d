"""A job fed its own records, end to end: the tiny SQLite job
(:mod:`tests.integration.tiny_sqlite_job`) under a descriptor whose ``record(draw)`` writes
orders of its own JSON schema (keys ``order-<n>``, a header) — Kafka, kills, the verdict from
its own ``effect``. The topic holds, per writer, a prefix of the stream the seed gives (byte for
byte), so the same seed gives the same records in another run."""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from sealcheck import (
    SKIP,
    Delete,
    Draw,
    NewRecord,
    Record,
    Upsert,
    WorkloadConfig,
)
from sealcheck.core.effects import Effects
from sealcheck.harness.run.workload import writer_records
from tests.integration.tiny_jobs import Tiny

pytestmark = pytest.mark.integration


@dataclass(frozen=True)
class OwnOrders(Tiny):
    """The tiny SQLite job, its topic carrying orders: ``{"order": n, "cents": ..., "by":
    writer, "seq": number}`` under ``order-<n>``, a tombstone a record without a value."""

    name = "own-orders"

    def record(self, draw: Draw) -> NewRecord:
        key = f"order-{draw.key}".encode()
        if draw.kind == "tombstone":
            return NewRecord(key, None)
        doc = {"order": draw.key, "cents": draw.rng.randrange(1, 10**7), "by": draw.writer}
        doc["seq"] = draw.number
        return NewRecord(key, json.dumps(doc).encode(), headers=[("source", b"sealcheck")])

    def effect(self, record: Record) -> Effects:
        key = record.key_text
        assert key is not None
        if record.value is None:
            return Delete(key)
        return Upsert(key, record.value.decode())


def test_a_job_fed_its_own_records_is_judged_by_its_own_effect(sealcheck: Any) -> None:
    result = sealcheck(
        OwnOrders(), nemeses=["kill"], duration=20, interval=5, keys=50, rate=50,
        **{"workload.bad_ratio": 0.0},
    )  # fmt: skip
    assert result.verdict == "VALID" and result.exit_code == 0, result.summary()
    run_dir = result.run_dir
    test = json.loads((run_dir / "test.json").read_text())
    seeds = test["producer_seeds"]
    mix = WorkloadConfig(**test["config"]["workload"]).mix()
    topic = pq.read_table(run_dir / "topic.parquet").to_pylist()
    assert topic and all(r["key"].startswith(b"order-") for r in topic)
    upserts = [r for r in topic if r["value"] is not None]
    assert all(r["headers"] == [{"name": "source", "value": b"sealcheck"}] for r in upserts)
    by_writer: dict[str, dict[int, bytes | None]] = {}
    for row in topic:
        if row["value"] is not None:
            doc = json.loads(row["value"])
            by_writer.setdefault(doc["by"], {})[doc["seq"]] = row["value"]
    for i, seed in enumerate(seeds):
        written = by_writer[f"w{i}"]
        stream = itertools.islice(writer_records(seed, mix, f"w{i}", OwnOrders().record), 100_000)
        expected = {n: r.value for n, (_, r) in enumerate(stream) if n in written}
        assert written == expected  # each writer's upserts, byte for byte, the seed's stream


SAMPLE = Path(__file__).with_name("accounts-sample.jsonl")


@dataclass(frozen=True)
class Accounts(Tiny):
    """The tiny SQLite job fed a recorded sample of account balances (its values as text; a
    record without a key, which it would store under NULL, skipped by the sample: none)."""

    name = "accounts-from-a-sample"

    def effect(self, record: Record) -> Effects:
        key = record.key_text
        if key is None:
            return SKIP
        if record.value is None:
            return Delete(key)
        return Upsert(key, record.value.decode())


def test_a_recorded_sample_replays_as_the_workload(sealcheck: Any) -> None:
    """Real records replayed: the topic holds only the sample's values, its keys folded onto
    the run's key space (its hottest keys kept), and the job is judged on them."""
    result = sealcheck(
        Accounts(), nemeses=["kill"], duration=20, interval=5, keys=20, rate=50,
        **{"workload.sample": str(SAMPLE)},
    )  # fmt: skip
    assert result.verdict == "VALID" and result.exit_code == 0, result.summary()
    test = json.loads((result.run_dir / "test.json").read_text())
    assert len(test["config"]["workload"]["sample_sha256"]) == 64  # pinned
    lines = [json.loads(x) for x in SAMPLE.read_text().splitlines()]
    values = {x["value"].encode() for x in lines if x["value"] is not None}
    topic = pq.read_table(result.run_dir / "topic.parquet").to_pylist()
    assert topic and all(r["value"] is None or r["value"] in values for r in topic)
    keys = {r["key"] for r in topic}
    assert len(keys) <= 20 and b"acct-0000" in keys  # folded onto 20 keys, the hottest kept
