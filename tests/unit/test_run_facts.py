"""The checkers record the run's facts (step assignment, seal lag, the failing keys' story) in
``results.json``; the report renders them and computes nothing (issue 25: the report only
renders). A run judged before the facts were recorded still renders, saying so, and
``sealcheck check`` records them."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from sealcheck.checkers import check_run, load_run
from sealcheck.checkers.facts import seal_lag
from sealcheck.checkers.replay import assign_steps
from sealcheck.harness.cli import app as cli
from sealcheck.report.report import render
from sealcheck.rundir.facts import (
    FACTS,
    MAX_POINTS,
    NOT_RECORDED,
    KeyStory,
    RunFacts,
    SealLag,
    StepAssignment,
    StoryRecord,
    StoryUpdate,
    read_facts,
)
from sealcheck.rundir.files import TopicRecord
from tests.runs import stored_run, write_history


def _results(run_dir: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((run_dir / "results.json").read_text())
    return doc


def _check(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> int:
    code = cli.main(["check", str(run_dir)])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code


def make_invalid(run_dir: Path) -> None:
    """The run as it would be had the system lost one update of ``data`` (its history written
    again, so that the files are the run's own)."""
    [path] = [p for p in run_dir.glob("*/updates.parquet") if p.parent.name != "captures"]
    updates = pl.read_parquet(path).with_row_index("i")
    data = updates.filter(pl.col("collection") == "data")
    victim = int(data["i"][data.height // 2])
    updates.filter(pl.col("i") != victim).drop("i").write_parquet(path)
    records = [TopicRecord(*r) for r in pl.read_parquet(run_dir / "topic.parquet").iter_rows()]
    uppers = load_run(run_dir).uppers
    (run_dir / "history.jsonl").unlink()
    write_history(run_dir, records, uppers)


def _without_facts(run_dir: Path) -> None:
    """``results.json`` as a check before this change wrote it."""
    doc = _results(run_dir)
    doc.pop(FACTS)
    (run_dir / "results.json").write_text(json.dumps(doc))


@pytest.fixture
def judged(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    run_dir = stored_run(tmp_path)
    assert _check(run_dir, capsys) == cli.EXIT_VALID
    return run_dir


def test_seal_lag_runs_from_acknowledgement_to_the_first_observed_seal() -> None:
    # acknowledged at 1 s, 2 s and 3 s; offset 2 is never bound
    acks = pl.DataFrame(
        {"time": [10**9, 2 * 10**9, 3 * 10**9], "partition": 0, "offset": [0, 1, 2]}
    )
    seen = [
        {"time": int(t * 1e9), "f": "uppers", "value": {"data": u}} for t, u in ((1.5, 0), (4.0, 1))
    ]
    ranges = pl.DataFrame({"partition": [0], "ts": [0], "start": [0], "end": [2]})
    lag = seal_lag(acks, assign_steps(acks, ranges), seen)
    assert (lag.count, lag.p50_s, lag.max_s) == (2, 2.5, 3.0)
    assert lag.p99_s == pytest.approx(2.99)
    assert lag.bucket_s == 1.0 and lag.series == [(1.0, 3.0), (2.0, 2.0)]


def test_the_lag_series_is_bounded_however_long_the_run() -> None:
    n = 50_000
    acks = pl.DataFrame({"time": [i * 2 * 10**9 for i in range(n)], "partition": 0})
    acks = acks.with_columns(pl.int_range(n).alias("offset"))
    ranges = pl.DataFrame({"partition": [0], "ts": [0], "start": [0], "end": [n]})
    seen = [{"time": 2 * n * 10**9, "f": "uppers", "value": {"data": 1}}]
    lag = seal_lag(acks, assign_steps(acks, ranges), seen)
    assert lag.count == n and 0 < len(lag.series) <= MAX_POINTS
    assert lag.series[0] == (0.0, 2 * n) and lag.max_s == 2 * n


def test_the_facts_shape_round_trips_through_json() -> None:
    facts = RunFacts(
        steps=StepAssignment(10, 8, 3, 0, 2, 4, 9, 7),
        seal_lag=SealLag(7, 0.5, 1.0, 1.25, 1.0, [(0.0, 1.25)]),
        stories=[
            KeyStory(
                "k",
                "state-mismatch at step 2",
                2,
                2,
                [StoryRecord(0, 1, None, 1.5, 2, True)],
                [StoryUpdate("data", '{"i": 1}', 2, 1, 3, True)],
                more_updates=4,
            )
        ],
        lag_why="",
    )
    doc = json.loads(json.dumps({FACTS: facts.to_dict()}))
    assert read_facts(doc) == facts
    assert facts.steps is not None and facts.steps.unbound == 2


@pytest.mark.parametrize(
    "raw",
    [[1, 2], {"steps": {"records": "many"}}, {"stories": [{"why": "no key"}]}, {"format": 99}],
)
def test_facts_that_cannot_be_read_say_so_and_how_to_record_them(raw: Any) -> None:
    facts = read_facts({FACTS: raw})
    assert facts.steps is None and facts.seal_lag is None and not facts.stories
    assert "cannot be read" in facts.lag_why and "sealcheck check" in facts.story_why


def test_a_check_records_the_facts_and_the_report_renders_them(judged: Path) -> None:
    doc = _results(judged)
    facts = read_facts(doc)
    assert facts.steps is not None and facts.seal_lag is not None
    assert facts.steps.records == facts.steps.acked == 400
    assert facts.steps.bound == facts.steps.acked_bound == 400 and facts.steps.steps == 10
    assert facts.steps.most == 40 and (facts.steps.first, facts.steps.last) == (0, 9)
    counts = doc["checkers"]["sealed_state"]["counts"]
    assert facts.steps.bound == counts["records_bound"]  # the assignment the checkers judged
    assert facts.seal_lag.count == 400 and facts.seal_lag.series
    assert facts.story_why == "no anomalies" and not facts.stories
    assert len(json.dumps(doc[FACTS])) < 2_000  # aggregates, not data per record
    page = render(judged)
    assert 'id="step-assignment"' in page and "400 of 400" in page
    assert '<table id="seal-lag">' in page and "seal lag: the slowest write" in page
    assert NOT_RECORDED not in page


def test_the_story_is_recorded_by_the_check_and_rendered_without_the_data(
    judged: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_invalid(judged)  # one update of data lost
    assert _check(judged, capsys) == cli.EXIT_INVALID
    facts = read_facts(_results(judged))
    assert facts.stories and not facts.story_why
    story = facts.stories[0]
    assert story.records and story.updates and story.bad_step is not None
    assert [u.hit for u in story.updates].count(True) <= 1
    for name in ("topic.parquet", "persist", "export"):  # the report reads results.json only
        path = judged / name
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
    page = render(judged)
    assert f"key {story.key} " in page and 'class="hit"' in page
    assert "could not be read" not in page


def test_a_run_judged_before_the_facts_still_renders_and_check_records_them(
    judged: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_invalid(judged)
    assert _check(judged, capsys) == cli.EXIT_INVALID
    _without_facts(judged)
    page = render(judged)
    assert 'id="verdict"' in page and "INVALID" in page
    assert page.count("not recorded for this run") == 3  # steps, seal lag, the keys' story
    assert '<table id="seal-lag">' not in page
    assert _check(judged, capsys) == cli.EXIT_INVALID  # re-judging records them
    assert FACTS in _results(judged) and "not recorded for this run" not in render(judged)


def test_a_run_whose_inputs_could_not_be_read_records_why_it_has_no_facts(
    tmp_path: Path,
) -> None:
    result = check_run(tmp_path)  # no topic dump
    doc = result.to_json()
    assert doc["valid"] == "unknown" and "could not be read" in doc[FACTS]["lag_why"]


def test_the_report_renders_without_loading_a_checker(judged: Path) -> None:
    code = (
        "import sys; from pathlib import Path; from sealcheck.report.report import render; "
        "render(Path(sys.argv[1])); "
        "print(sorted(m for m in sys.modules if m.startswith('sealcheck.checkers')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(judged)], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
