"""A run stored before issue 25's names — its export in ``persist/``, the supervisor's ops
``pipeline-start``/``pipeline-exit``, logs ``pipeline-N.log``, contexts ``last_pipeline_*`` —
still loads, and ``sealcheck check`` judges it as it was judged then; the report still links
its logs and shows its batches."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from sealcheck.harness.cli import app as cli
from sealcheck.report.batches import NOT_RECORDED, batch_rows
from sealcheck.report.explain import context_lines
from sealcheck.report.report import render
from sealcheck.rundir import names
from sealcheck.rundir.files import Export, TopicRecord, step_labels
from sealcheck.rundir.history import History
from sealcheck.rundir.history_writer import HistoryWriter
from tests.runs import stored_run, write_history


def _check(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    code = cli.main(["check", str(run_dir)])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err and code != cli.EXIT_CRASH, out + err
    doc: dict[str, Any] = json.loads((run_dir / "results.json").read_text())
    return code, doc


def _lose_one_update(run_dir: Path) -> None:
    """The run as it would be had the system lost one update of ``data``."""
    path = run_dir / "export" / "updates.parquet"
    updates = pl.read_parquet(path).with_row_index("i")
    victim = int(updates.filter(pl.col("collection") == "data")["i"][10])
    updates.filter(pl.col("i") != victim).drop("i").write_parquet(path)


def _record(run_dir: Path, old: bool) -> None:
    """Write the run's history again (its manifest recording the files as they are now), with
    an incarnation killed and restarted, under the old op names or today's."""
    topic = pl.read_parquet(run_dir / "topic.parquet")
    records = [TopicRecord(*row) for row in topic.iter_rows()]
    export = Export.of(run_dir)
    frontiers = json.loads((run_dir / export.frontiers).read_text())
    start, exit_ = ("pipeline-start", "pipeline-exit") if old else (names.SUT_START, names.SUT_EXIT)
    (run_dir / "history.jsonl").unlink()
    h = HistoryWriter(run_dir / "history.jsonl")
    h.append("supervisor", "info", start, {"incarnation": 0, "pid": 10})
    killed = {"incarnation": 0, "pid": 10, "code": -9, "failpoint": None, "signal": "SIGKILL"}
    h.append("supervisor", "info", exit_, killed)
    h.append("supervisor", "info", start, {"incarnation": 1, "pid": 11})
    write_history(run_dir, records, {c: f["upper"] for c, f in frontiers.items()}, h)
    for n in (0, 1):
        name = f"pipeline-{n}.log" if old else names.sut_log(n)
        (run_dir / "logs" / name).write_text(f"incarnation {n}\n")


def _as_stored_before(run_dir: Path) -> None:
    """The run directory as the harness wrote it before the rename: ``persist/``, the old op
    names (the manifest recording ``persist/...``), ``logs/pipeline-N.log``."""
    (run_dir / "export").rename(run_dir / "persist")
    shutil.rmtree(run_dir / "logs")
    (run_dir / "logs").mkdir()
    _record(run_dir, old=True)


@pytest.mark.parametrize("lost", [False, True], ids=["valid", "invalid"])
def test_a_run_stored_under_the_old_names_is_judged_as_before(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], lost: bool
) -> None:
    run_dir = stored_run(tmp_path)
    (run_dir / "logs").mkdir(exist_ok=True)
    if lost:
        _lose_one_update(run_dir)
    _record(run_dir, old=False)
    before_code, before = _check(run_dir, capsys)  # as judged in today's layout
    assert 'href="logs/sut-0.log"' in (run_dir / "report.html").read_text()
    _as_stored_before(run_dir)
    raw = (run_dir / "history.jsonl").read_text()
    assert '"pipeline-start"' in raw and '"persist/updates.parquet"' in raw and "sut-" not in raw
    assert not (run_dir / "export").exists()

    code, doc = _check(run_dir, capsys)

    assert code == before_code == (cli.EXIT_INVALID if lost else cli.EXIT_VALID)
    assert doc["valid"] is (not lost)
    assert doc["inputs"]["problems"] == []
    assert not any("manifest" in n for n in doc["inputs"]["notes"])
    assert doc["checkers"].keys() == before["checkers"].keys()
    for name, c in doc["checkers"].items():
        was = before["checkers"][name]
        assert (c["valid"], c.get("anomaly_counts")) == (was["valid"], was.get("anomaly_counts"))
    ops = History.load(run_dir / "history.jsonl").ops
    fs = [o["f"] for o in ops if o["process"] == "supervisor"]
    assert fs == [names.SUT_START, names.SUT_EXIT, names.SUT_START]  # read by today's names
    page = (run_dir / "report.html").read_text()
    assert 'href="logs/pipeline-0.log"' in page  # the exits table links the old log
    assert names.log_of(run_dir, 1) == "logs/pipeline-1.log"
    assert names.log_of(run_dir, 2) is None
    if lost:
        contexts = [
            a.get("context") or {} for c in doc["checkers"].values() for a in c.get("anomalies", [])
        ]
        assert any(names.LAST_START in ctx for ctx in contexts)


def test_old_context_keys_and_an_old_delta_export_still_render(tmp_path: Path) -> None:
    ctx = {
        "sealed_by_ns": 5_000_000_000,
        "last_pipeline_exit": {"time": 3_000_000_000, "value": {"incarnation": 0, "code": -9}},
        "last_pipeline_start": {"time": 4_000_000_000, "value": {"incarnation": 1}},
    }
    lines = context_lines(ctx)
    assert "2.0 s after incarnation 0 exited -9 (at 3.0 s; the last exit before the seal)" in lines
    assert "1.0 s after incarnation 1 started (at 4.0 s; the last start before the seal)" in lines
    assert not any(line.startswith("last_pipeline") for line in lines)

    (tmp_path / "persist").mkdir()
    versions = {
        "tables": {"data": {"1": {"batch": 0}, "2": {"batch": 1}}},
        "batches": {"planned": [0, 1], "committed": [0]},
    }
    (tmp_path / "persist" / "versions.json").write_text(json.dumps(versions))
    assert Export.of(tmp_path) == Export("persist")
    assert step_labels(tmp_path)[1] == "batch 1: data v2"
    found = batch_rows(tmp_path, [])
    assert found is not None
    rows, counts = found
    assert counts["ran_more_than_once"] is None and rows[1][-2] == NOT_RECORDED
    page = render(tmp_path)
    assert "Micro-batches and table versions" in page
    assert "which incarnations started them was not recorded" in page
