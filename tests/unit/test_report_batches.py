"""The report's micro-batch section: replays and double commits read at once (who started a
batch: the ``batch_start`` events in the history)."""

from __future__ import annotations

import json
from pathlib import Path

from sealcheck.report.batches import batch_rows, tables_of
from sealcheck.report.report import render
from sealcheck.rundir.files import step_labels
from sealcheck.rundir.names import SUT_EVENT


def test_a_replayed_batch_and_a_double_commit_are_named(tmp_path: Path) -> None:
    (tmp_path / "export").mkdir()
    doc = {
        "tables": {
            "data": {
                "0": {"batch": None, "operation": "CREATE TABLE"},
                "1": {"batch": 0, "operation": "MERGE"},
                "2": {"batch": 1, "operation": "MERGE"},
                "3": {"batch": 1, "operation": "MERGE"},
            },
            "errors": {
                "1": {"batch": 0, "operation": "MERGE"},
                "2": {"batch": 1, "operation": "MERGE"},
            },
        },
        "batches": {"planned": [0, 1, 2], "committed": [0, 1]},
    }
    (tmp_path / "export" / "versions.json").write_text(json.dumps(doc))
    started = [(0, 0), (0, 1), (1, 1)]  # (incarnation, batch), as the supervisor recorded them
    ops = [
        {
            "process": "sut",
            "f": SUT_EVENT,
            "value": {"event": "batch_start", "batch": b, "incarnation": n},
        }
        for n, b in started
    ]
    found = batch_rows(tmp_path, ops)
    assert found is not None
    rows, counts = found
    assert counts == {"batches": 3, "ran_more_than_once": 1, "committed_twice": 1}
    assert rows[1] == [1, "yes", "yes", "2, 3", "2", "0, 1", "replayed; a table committed it twice"]
    assert rows[2][-1] == "planned, never committed by Spark"
    assert tables_of(tmp_path) == ["data", "errors"]
    assert step_labels(tmp_path)[1] == "batch 1: data v2, data v3, errors v2"
    assert "Micro-batches and table versions" in render(tmp_path)


def test_without_versions_there_is_no_section(tmp_path: Path) -> None:
    assert batch_rows(tmp_path) is None
    assert "Micro-batches" not in render(tmp_path)
