"""A Delta job judged from its tables alone (``DeltaOutput(checkpoint=None)``): real Delta
tables written with delta-rs, exported by the real export (a child process), states told from
the commits' batch tags, or from commit order."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pyarrow as pa
import pytest
from deltalake import CommitProperties, Transaction, write_deltalake

from sealcheck.checkers import run_checkers
from sealcheck.checkers.inputs import RunData
from sealcheck.rundir.states import read_states
from sealcheck.systems.outputs import DeltaOutput
from sealcheck.systems.outputs.delta_export import states_of
from tests.runs import build_run
from tests.unit.test_sql_output import PAIRS, _without_bindings

SCHEMA = pa.schema([("key", pa.string()), ("value", pa.string())])


def write(table: Path, rows: list[tuple[str, str]], batch: int | None, app: str | None) -> None:
    """One commit of ``rows`` (append), tagged with ``batch`` by the writer ``app`` (a ``txn``
    action), by ``batch=<id>`` only (``app`` None), or not at all (``batch`` None)."""
    keys, values = zip(*rows, strict=True) if rows else ((), ())
    data = pa.table({"key": list(keys), "value": list(values)}, schema=SCHEMA)
    props = None
    if batch is not None:
        txns = [Transaction(app, batch)] if app is not None else None
        props = CommitProperties(custom_metadata={"userMetadata": f"batch={batch}"},
                                 app_transactions=txns)  # fmt: skip
    write_deltalake(str(table), data, mode="append", commit_properties=props)


def export(tmp_path: Path) -> tuple[dict[str, dict[str, object]], pl.DataFrame]:
    out = DeltaOutput(checkpoint=None, data=tmp_path / "data", errors=tmp_path / "errors",
                      value="value")  # fmt: skip
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    out.export(run_dir)
    frontiers = json.loads((run_dir / "export" / "frontiers.json").read_text())
    updates = pl.read_parquet(run_dir / "export" / "updates.parquet")
    assert not (run_dir / "export" / "asof.parquet").exists()  # no model step to compare with
    return frontiers, updates


def _states(updates: pl.DataFrame, name: str) -> list[int]:
    return sorted(updates.filter(pl.col("collection") == name)["ts"].unique().to_list())


def test_tagged_commits_of_one_writer_are_states_per_batch_both_tables_together(tmp_path):
    for batch, app in ((0, "job"), (1, "job")):
        write(tmp_path / "data", [(f"k{batch}", "v")], batch, app)
        write(tmp_path / "errors", [(f"e{batch}", "bad")], batch, app)
    write(tmp_path / "data", [("k1", "w")], 1, "job")  # a replayed batch: still batch 1
    frontiers, updates = export(tmp_path)
    assert frontiers["bindings"] == {"upper": 0, "since": 0, "kept": False}
    assert frontiers["data"]["upper"] == frontiers["errors"]["upper"] == 3  # 3 versions of data
    assert "aligned" not in frontiers["errors"]
    assert _states(updates, "data") == _states(updates, "errors") == [0, 1]
    assert "bindings" not in set(updates["collection"].to_list())


def test_untagged_commits_are_states_in_commit_order_each_table_alone(tmp_path):
    write(tmp_path / "data", [("a", "1")], None, None)
    write(tmp_path / "errors", [("e", "bad")], None, None)
    write(tmp_path / "data", [("b", "1")], None, None)
    frontiers, updates = export(tmp_path)
    assert frontiers["errors"]["aligned"] is False
    assert _states(updates, "data") == [0, 2] and _states(updates, "errors") == [1]
    assert frontiers["data"]["upper"] == 3
    record = read_states(
        tmp_path / "run" / "export" / "versions.json", tmp_path / "run"
    )  # each state's versions
    assert record is not None and record.by == "commits"
    assert record.labels() == {0: "data v0", 1: "errors v0", 2: "data v1"}


def test_two_writers_are_states_in_commit_order_judged_together(tmp_path):
    write(tmp_path / "data", [("a", "1")], 0, "job")
    write(tmp_path / "errors", [("e", "bad")], 0, "job-errors")
    write(tmp_path / "data", [("b", "1")], 1, "job")
    frontiers, updates = export(tmp_path)
    assert "aligned" not in frontiers["errors"]  # two queries: nothing makes them move together
    assert _states(updates, "data") == [0, 2] and _states(updates, "errors") == [1]
    record = read_states(tmp_path / "run" / "export" / "versions.json", tmp_path / "run")
    assert record is not None and record.labels()[1] == "errors v0 (batch 0)"


def test_states_of_refuses_an_untagged_commit_without_a_time():
    meta = {"data": {1: {"batch": None, "txn": None, "timestamp": None}}}
    with pytest.raises(RuntimeError, match="data version 1 names no batch and no commit time"):
        states_of(meta, {("data", 1)}, batched=False)


def test_unaligned_tables_are_judged_each_alone():
    run = _without_bindings(build_run(PAIRS, partitions=1, step_size=2))
    # the dead letter of c (offset 3) shows one state before a=2 (offset 2): judged together
    # no prefix explains them; judged each alone both tables are prefixes
    early = (pl.col("collection") == "errors") & (pl.col("ts") == 1)
    moved = run.updates.with_columns(
        pl.when(early).then(pl.col("ts") - 1).otherwise(pl.col("ts")).alias("ts")
    )
    together = RunData(run.topic, moved, run.uppers, run.sinces, run.history, unkept=run.unkept)
    assert run_checkers(together, ["prefix"]).checkers["prefix"].valid is False
    alone = RunData(run.topic, moved, run.uppers, run.sinces, run.history, unkept=run.unkept,
                    unaligned=frozenset({"errors"}))  # fmt: skip
    res = run_checkers(alone, ["prefix"]).checkers["prefix"]
    assert res.valid is True and res.counts["tables_aligned_judged"] == 0
