"""sealcheck shrink: delta debugging over a planned schedule, with a fake runner (the real
runs are covered by the integration test and the note's measured shrink)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sealcheck.harness.campaigns.shrink import (
    Shrinker,
    ShrinkError,
    ddmin,
    parse_kind,
    schedule_hash,
    units,
)
from sealcheck.harness.run.config import TestConfig
from sealcheck.nemeses import Action

SCHEDULE = [
    Action(2.0, "kill", "kill-pipeline"),
    Action(4.0, "pause", "pause-pipeline"),
    Action(5.0, "kill", "kill-pipeline"),
    Action(7.0, "pause", "resume-pipeline"),
    Action(9.0, "failpoint", "arm-failpoint", {"failpoint": "data.before_append"}),
    Action(12.0, "kill", "kill-pipeline"),
]


def _run_dir(tmp_path: Path, valid: bool | None = False) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    cfg = TestConfig(duration_s=30.0, nemesis_interval_s=3.0, nemeses=("kill", "pause"))
    meta = {"config": cfg.to_json(), "schedule": [a.to_json() for a in SCHEDULE]}
    (run / "test.json").write_text(json.dumps(meta))
    checkers = {
        "unique_key": {"valid": valid, "anomaly_counts": {"two-values": 3, "x": 1}},
        "bindings": {"valid": True, "anomaly_counts": {}},
    }
    (run / "results.json").write_text(json.dumps({"valid": valid, "checkers": checkers}))
    return run


class FakeRuns:
    """Reproduces when the kill at 5 s and the pause (with its resume) are both planned; the
    first try of every candidate misses (timing), so each needs its second try."""

    def __init__(self) -> None:
        self.calls: list[tuple[float, list[Action]]] = []

    def __call__(self, cfg: TestConfig, schedule: list[Action]) -> dict[str, Any]:
        key = schedule_hash(schedule, cfg.duration_s)
        tries = sum(1 for d, s in self.calls if schedule_hash(s, d) == key)
        self.calls.append((cfg.duration_s, schedule))
        fs = {(a.at_s, a.f) for a in schedule}
        hit = {(5.0, "kill-sut"), (4.0, "pause-sut"), (7.0, "resume-sut")} <= fs
        hit = hit and cfg.duration_s >= 10 and tries >= 1
        return {"valid": not hit, "kinds": [["unique_key", "two-values"]] if hit else []}


def test_ddmin_finds_a_one_minimal_subset() -> None:
    assert ddmin(list(range(10)), lambda xs: {3, 7} <= set(xs)) == [3, 7]
    assert ddmin(list(range(5)), lambda xs: 4 in xs) == [4]


def test_an_interval_is_one_unit() -> None:
    ends = {"resume-pipeline": "pause-pipeline"}
    assert units(SCHEDULE, ends) == [[0], [1, 3], [2], [4], [5]]


def test_shrinks_to_the_needed_faults_then_a_shorter_run_and_resumes(tmp_path: Path) -> None:
    run = _run_dir(tmp_path)
    fake = FakeRuns()
    shrinker = Shrinker(run, fake, runs_per_candidate=2, max_runs=60, confirm=2, log=lambda _: None)
    summary = shrinker.shrink()
    # the stored schedule spells the role's old name; it is read as the new one
    assert [(a.at_s, a.f) for a in summary.minimal] == [
        (4.0, "pause-sut"),
        (5.0, "kill-sut"),
        (7.0, "resume-sut"),
    ]
    assert summary.duration_s == 10.0  # the last action at 7 s plus one interval
    assert summary.target == ("unique_key", "two-values")
    assert summary.runs == 4 and summary.hits == 3  # the first try of each candidate misses
    saved = json.loads((run / "shrink" / "minimal" / "test.json").read_text())
    assert len(saved["schedule"]) == 3 and saved["config"]["duration_s"] == 10.0
    assert json.loads((run / "shrink" / "summary.json").read_text())["reproduced"]["hits"] == 3
    # an interrupted (here: finished) shrink resumes from the stored outcomes: no new runs
    again = Shrinker(run, FakeRuns(), runs_per_candidate=2, max_runs=60, confirm=2)
    assert again.shrink().minimal == summary.minimal and again.runs_used == 0


def test_a_budget_keeps_the_best_schedule_found_so_far(tmp_path: Path) -> None:
    run = _run_dir(tmp_path)
    summary = Shrinker(run, FakeRuns(), max_runs=5, log=lambda _: None).shrink()
    assert not summary.budget_left and summary.runs_used == 5
    assert 3 <= len(summary.minimal) <= len(SCHEDULE)


def test_refuses_runs_without_an_anomaly_and_unknown_kinds(tmp_path: Path) -> None:
    (tmp_path / "valid").mkdir()
    with pytest.raises(ShrinkError, match="only an INVALID run"):
        Shrinker(_run_dir(tmp_path / "valid", valid=True), FakeRuns())
    with pytest.raises(ShrinkError, match="does not exist"):
        Shrinker(tmp_path / "nowhere", FakeRuns())
    run = _run_dir(tmp_path)
    with pytest.raises(ShrinkError, match="it has unique_key:two-values, unique_key:x"):
        Shrinker(run, FakeRuns(), kind=("sealed_state", "mismatch"))
    with pytest.raises(ShrinkError, match="CHECKER:KIND"):
        parse_kind("unique_key")
