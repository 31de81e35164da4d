"""Reading a Structured Streaming query's checkpoint and Delta logs as files (no Spark)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sealcheck.systems.delta_streaming import DeltaStreaming
from sealcheck.systems.job import JobRun
from sealcheck.systems.outputs import delta_log as layout
from sealcheck.systems.outputs.delta_export import bindings_rows


def offsets_file(
    root: Path, batch: int, offs: dict[int, int], topic: str = "t", planned: int = 1
) -> None:
    path = root / "checkpoint" / "offsets" / str(batch)
    path.parent.mkdir(parents=True, exist_ok=True)
    source = json.dumps({topic: {str(p): o for p, o in offs.items()}})
    meta = json.dumps({"batchWatermarkMs": 0, "batchTimestampMs": planned, "conf": {}})
    path.write_text(f"v1\n{meta}\n{source}")


def uppers(root: Path, variant: str | None = None) -> dict[str, int] | None:
    return DeltaStreaming().output(JobRun("", "t", root, 100, variant)).uppers()


def commit_file(table: Path, version: int, *actions: dict[str, object]) -> None:
    path = table / "_delta_log" / f"{version:020d}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(json.dumps(a) for a in actions) + "\n")


def txn(batch: int) -> dict[str, object]:
    return {"txn": {"appId": "app", "version": batch, "lastUpdated": 1}}


def info(op: str, meta: str | None = None) -> dict[str, object]:
    return {"commitInfo": {"operation": op, "userMetadata": meta}}


def test_uppers_from_the_offset_log_and_each_tables_last_batch(tmp_path: Path) -> None:
    assert uppers(tmp_path) is None
    offsets_file(tmp_path, 0, {0: 5, 1: 3})
    offsets_file(tmp_path, 1, {0: 9, 1: 3})
    offsets_file(tmp_path, 2, {0: 9, 1: 8})
    commit_file(tmp_path / "data", 0, info("CREATE TABLE"))
    commit_file(tmp_path / "data", 1, txn(0), info("MERGE", "batch=0"))
    commit_file(tmp_path / "data", 2, txn(1), info("MERGE", "batch=1"))
    commit_file(tmp_path / "errors", 0, info("CREATE TABLE"))
    commit_file(tmp_path / "errors", 1, txn(0), info("MERGE", "batch=0"))
    assert uppers(tmp_path) == {"bindings": 3, "data": 2, "errors": 1}
    assert layout.offsets(tmp_path / "checkpoint", 1) == {0: 9, 1: 3}


def test_a_commit_without_txn_is_mapped_by_its_batch_tag(tmp_path: Path) -> None:
    commit_file(tmp_path / "data", 3, info("MERGE", "batch=7"))
    commit_file(tmp_path / "data", 4, info("OPTIMIZE"))
    assert layout.commit(tmp_path / "data", 3).batch() == 7
    assert layout.commit(tmp_path / "data", 4).batch() is None
    assert layout.table_upper(tmp_path / "data") == 8  # the newest commit with a batch


def test_bindings_are_upserts_of_the_moved_partitions(tmp_path: Path) -> None:
    offsets_file(tmp_path, 0, {0: 5, 1: 0})
    offsets_file(tmp_path, 1, {0: 9, 1: 0})
    rows = bindings_rows(tmp_path / "checkpoint", "t")
    assert rows == [
        ("bindings", b"0", b"5", 0, 1),
        ("bindings", b"1", b"0", 0, 1),
        ("bindings", b"0", b"5", 1, -1),
        ("bindings", b"0", b"9", 1, 1),
    ]


def test_an_offsets_file_in_another_format_is_named(tmp_path: Path) -> None:
    path = tmp_path / "checkpoint" / "offsets" / "0"
    path.parent.mkdir(parents=True)
    path.write_text("v2\n{}\n")
    with pytest.raises(layout.LayoutError, match="offsets/0"):
        layout.offsets(tmp_path / "checkpoint", 0)


def test_a_batch_spark_committed_seals_a_table_without_a_delta_commit(tmp_path: Path) -> None:
    """A MERGE that changes nothing and records no transaction identifier leaves no Delta
    commit; Spark's commits/N still says the batch's foreachBatch returned."""
    for b in (0, 1):
        offsets_file(tmp_path, b, {0: 5 * (b + 1)})
        done = tmp_path / "checkpoint" / "commits" / str(b)
        done.parent.mkdir(parents=True, exist_ok=True)
        done.write_text('v1\n{"nextBatchWatermarkMs":0}')
    commit_file(tmp_path / "data", 1, info("MERGE", "batch=0"))
    commit_file(tmp_path / "data", 2, info("MERGE", "batch=1"))
    commit_file(tmp_path / "errors", 1, info("MERGE", "batch=0"))
    assert uppers(tmp_path) == {"bindings": 2, "data": 2, "errors": 2}
    # a dead-letter query with its own checkpoint seals the errors table by its own log
    (tmp_path / "checkpoint-errors" / "commits").mkdir(parents=True)
    assert uppers(tmp_path, "unrelated-errors-query") == {"bindings": 2, "data": 2, "errors": 1}


def info_at(op: str, ms: int) -> dict[str, object]:
    return {"commitInfo": {"operation": op, "timestamp": ms}}


def test_a_commit_without_txn_or_tag_belongs_to_the_batch_planned_before_it(tmp_path: Path) -> None:
    """A job that writes no batch id: each version belongs to the last batch planned strictly
    before it was committed — a replay of batch 1 after a crash (committed after batch 1 was
    planned, before batch 2 was) too."""
    for b, planned in ((0, 1_000), (1, 2_000), (2, 3_000)):
        offsets_file(tmp_path, b, {0: 5 * (b + 1)}, planned=planned)
    table = tmp_path / "data"
    commit_file(table, 0, info_at("CREATE TABLE", 500))  # before the query planned anything
    commit_file(table, 1, info_at("MERGE", 1_400))
    commit_file(table, 2, info_at("MERGE", 2_000))  # in the same ms batch 1 was planned: batch 0
    commit_file(table, 3, info_at("MERGE", 2_700))
    commit_file(table, 4, info_at("MERGE", 2_900))  # batch 1 again, after a restart
    commit_file(table, 5, info_at("MERGE", 3_001))
    clock = layout.Clock(tmp_path / "checkpoint")
    found = [layout.commit(table, v).batch(clock) for v in range(6)]
    assert found == [None, 0, 0, 1, 1, 2]
    assert layout.table_upper(table, clock) == 3
    inc = {"commitInfo": {"operation": "MERGE", "timestamp": 1, "inCommitTimestamp": 2_500}}
    commit_file(table, 6, inc)  # a table with in-commit timestamps: that one counts
    assert layout.commit(table, 6).batch(clock) == 1
