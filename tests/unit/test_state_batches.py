"""Which batches each state of an output without bindings follows (issue 48): the job's
checkpoint read at each state the harness takes
(:func:`sealcheck.systems.job_checkpoint.checkpoint_batches`),
a state read mid-batch named by its batch once its ``commits/N`` is seen, and a state read at
the end (Delta tables alone) named by its batch but given no moment in the run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from sealcheck.checkers import run_checkers
from sealcheck.checkers.inputs import RunData
from sealcheck.rundir.states import BATCHES, StateBatches, StateRecord, read_states
from sealcheck.systems.job_checkpoint import checkpoint_batches, watch_checkpoint
from sealcheck.systems.outputs import SQLiteOutput
from tests.runs import build_run
from tests.unit.test_report_honesty import WINDOWS, sql_sink
from tests.unit.test_sql_output import PAIRS, _without_bindings


def test_each_state_records_the_newest_committed_and_planned_batch(tmp_path: Path) -> None:
    cp = tmp_path / "checkpoint"
    assert checkpoint_batches(tmp_path, WINDOWS) == (None, None)  # no checkpoint yet
    for d in ("offsets", "commits"):
        (cp / d).mkdir(parents=True)
    for n in (8, 9, 10, 11):
        (cp / "offsets" / str(n)).touch()
    for n in (8, 9, 10):
        (cp / "commits" / str(n)).touch()
    (cp / "commits" / ".11.crc").touch()  # Hadoop's checksums and temporary files: no batch
    (cp / "offsets" / ".12.tmp").touch()
    assert checkpoint_batches(tmp_path, WINDOWS) == (10, 11)  # 10 sorts after 9 (a number)
    assert checkpoint_batches(tmp_path, ()) == (None, None)  # no windows: nothing read


def test_a_state_read_mid_batch_is_named_by_its_batch_once_committed(tmp_path: Path) -> None:
    cp = tmp_path / "checkpoint"
    for d in ("offsets", "commits"):
        (cp / d).mkdir(parents=True)
    out = SQLiteOutput(tmp_path / "x.db", "accounts", "id", exclude=("at",))
    watch_checkpoint(out, tmp_path, WINDOWS)
    write = sql_sink(out.path)
    (cp / "offsets" / "0").touch()
    write(0)  # the sink committed batch 0; commits/0 is not there yet
    assert out.uppers() == {"data": 1, "errors": 1}
    (cp / "commits" / "0").touch()
    assert out.uppers() == {"data": 1, "errors": 1}  # unchanged: the state is batch 0's
    (cp / "offsets" / "1").touch()
    write(1)
    (cp / "commits" / "1").touch()
    (cp / "offsets" / "2").touch()  # batch 2 planned before the harness looks
    assert out.uppers() == {"data": 2, "errors": 2}
    out.export(tmp_path / "run")
    record = read_states(tmp_path / "run" / "export" / "versions.json", tmp_path / "run")
    assert record is not None
    assert record.labels() == {
        0: "batch 0 committed; batch 0 since the start",
        1: "batch 1 committed, batch 2 in flight; batch 1 since the state before",
    }


def test_an_anomaly_at_a_state_read_at_the_end_names_its_batch_but_no_moment() -> None:
    run = _without_bindings(build_run(PAIRS, partitions=1, step_size=2))
    lost = (pl.col("key") == b"a") & (pl.col("ts") == 1)  # no prefix explains state 2 then
    steps = range(run.uppers["data"])
    tables = StateRecord(
        BATCHES, False, tuple(StateBatches(s, s, s, (f"data v{s}",)) for s in steps)
    )

    def judged(record: StateRecord | None) -> dict[str, Any]:
        data = RunData(run.topic, run.updates.filter(~lost), run.uppers, run.sinces, run.history,
                       unkept=run.unkept, step_names=record.labels() if record else {},
                       states=record)  # fmt: skip
        prefix = run_checkers(data, ["prefix"]).checkers["prefix"]
        return next(a.context for a in prefix.anomalies if a.kind == "no-prefix")

    sampled = judged(None)  # states the harness took: their moment is the observer's
    assert isinstance(sampled["sealed_by_ns"], int) and "last_nemesis" not in sampled
    read_at_the_end = judged(tables)  # Delta tables alone: versions, counted apart
    assert read_at_the_end["batch"] == "batch 2: data v2"
    assert "sealed_by_ns" not in read_at_the_end and read_at_the_end["partition"] == 0


def test_states_read_while_the_first_batch_was_in_flight_name_no_batch() -> None:
    """A job halted in its first batch: its states follow no committed batch, and the report
    says so rather than "2 of 2 states name … (batch None committed)"."""
    from sealcheck.rundir.states import sampled

    record = sampled([(None, 0), (None, 1)], checkpoint=True)
    assert record.named == [] and all(s.in_flight for s in record.states)
    assert record.labels() == {0: "no batch committed yet, batch 0 in flight",
                               1: "no batch committed yet, batches 0-1 in flight"}  # fmt: skip
