"""Catch-up proven, not waited for (issue 52): a job whose output keeps no bindings is caught up
once every query's checkpoint under its directory has committed a batch whose end offsets
reach the log end (Spark writes ``commits/N`` only after the batch's sink returned); until
then, and for a job with no checkpoint or a query of another topic, the harness still waits
for the output to settle."""

from __future__ import annotations

import json
from pathlib import Path

from sealcheck.systems.api import Progress
from sealcheck.systems.job_checkpoint import committed_end, proven, query_checkpoints


def batch(
    checkpoint: Path, n: int, ends: dict[int, int], committed: bool, topic: str = "t"
) -> None:
    (checkpoint / "offsets").mkdir(parents=True, exist_ok=True)
    (checkpoint / "commits").mkdir(parents=True, exist_ok=True)
    source = json.dumps({topic: {str(p): o for p, o in ends.items()}})
    (checkpoint / "offsets" / str(n)).write_text(f'v1\n{{"batchWatermarkMs":0}}\n{source}')
    if committed:
        (checkpoint / "commits" / str(n)).write_text('v1\n{"nextBatchWatermarkMs":0}')


def test_every_querys_newest_commit_bounds_what_the_output_holds(tmp_path: Path) -> None:
    main, dead = tmp_path / "checkpoint", tmp_path / "queries" / "dead-letters"
    batch(main, 0, {0: 10, 1: 5}, True)
    batch(main, 1, {0: 20, 1: 9}, True)
    batch(main, 2, {0: 30, 1: 12}, False)  # planned, not committed: proves nothing yet
    batch(dead, 0, {0: 18, 1: 9}, True)
    (tmp_path / "table" / "_delta_log").mkdir(parents=True)
    assert query_checkpoints(tmp_path) == sorted([main, dead])
    assert committed_end(tmp_path, "t") == {0: 18, 1: 9}  # the slower query bounds it
    settling = Progress({"data": 3}, {}, settle_s=30.0)
    assert not proven(settling, tmp_path, "t").covers({0: 20, 1: 9})  # type: ignore[union-attr]
    batch(dead, 1, {0: 20, 1: 9}, True)
    assert proven(settling, tmp_path, "t").covers({0: 20, 1: 9})  # type: ignore[union-attr]
    assert proven(settling, tmp_path, "t").covers({0: 20, 1: 9, 2: 0})  # type: ignore[union-attr]


def test_nothing_proven_without_a_commit_a_checkpoint_or_the_topic(tmp_path: Path) -> None:
    assert committed_end(tmp_path, "t") is None  # no checkpoint (a job of files alone)
    batch(tmp_path / "checkpoint", 0, {0: 10}, False)
    assert committed_end(tmp_path, "t") is None  # nothing committed yet
    batch(tmp_path / "checkpoint", 0, {0: 10}, True)
    assert committed_end(tmp_path, "t") == {0: 10}
    batch(tmp_path / "other", 0, {0: 99}, True, topic="another")
    assert committed_end(tmp_path, "t") is None  # a query of another topic proves nothing


def test_an_output_with_bindings_is_judged_by_them_alone(tmp_path: Path) -> None:
    batch(tmp_path / "checkpoint", 0, {0: 10}, True)
    bound = Progress({"data": 2, "errors": 2}, {0: 4})
    assert proven(bound, tmp_path, "t") is bound
    assert not bound.covers({0: 10})
    assert Progress({"data": 1}, {}, settle_s=30.0).covers({0: 10}) is False  # unproven
