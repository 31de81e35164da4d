"""What a ``results.json`` proves is its checkers composed — by the same rule the checkers use
when they write it — never its top-level ``valid`` alone: a flag edited after the run, or a
report that no longer matches the file, makes the run UNKNOWN, saying so and how to re-judge
it, in every reader (serve, the result a pytest test or a suite reads back, the archive's
listing)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from sealcheck.checkers.result import CheckResult, RunResult
from sealcheck.harness.campaigns.verdicts import read_result
from sealcheck.report.serve import read_run
from sealcheck.rundir.archive import list_runs, write_plain_report
from sealcheck.rundir.judged import (
    VERDICT_WORDS,
    checkers_verdict,
    compose,
    proven,
    report_verdict,
    run_verdict,
)

NA = "not applicable"
#: what one checker can conclude
OUTCOMES: list[bool | str | None] = [True, False, None, NA]


def _result(outcomes: tuple[bool | str | None, ...], problems: bool, not_run: bool) -> RunResult:
    checkers = {
        f"c{i}": CheckResult.not_applicable(f"c{i}", "nothing here")
        if o == NA
        else CheckResult(f"c{i}", o if isinstance(o, bool) else None)
        for i, o in enumerate(outcomes)
    }
    return RunResult(
        checkers,
        input_problems=["the history was cut short"] if problems else [],
        not_run=["prefix"] if not_run else [],
    )


COMBINATIONS = [
    (outcomes, problems, not_run)
    for n in range(4)
    for outcomes in itertools.product(OUTCOMES, repeat=n)
    for problems in (False, True)
    for not_run in (False, True)
]


@pytest.mark.parametrize(("outcomes", "problems", "not_run"), COMBINATIONS)
def test_the_readers_rule_is_the_checkers_rule_on_every_combination(
    outcomes: tuple[bool | str | None, ...], problems: bool, not_run: bool
) -> None:
    result = _result(outcomes, problems, not_run)
    doc = json.loads(json.dumps(result.to_json()))  # as read back from the file
    shown = proven(doc)
    assert shown.checkers is result.valid and checkers_verdict(doc) is result.valid
    assert shown.flag_agrees and shown.valid is result.valid
    assert shown.disagreement("runs/t/1") is None
    # the same rule, spelled out: false > unknown > true over the applicable ones; unknown
    # with none, and never valid on an input problem or with a checker not run
    judged = [o for o in outcomes if o != NA]
    expected = compose(judged) if judged else None  # type: ignore[arg-type]
    if expected is True and (problems or not_run):
        expected = None
    assert result.valid is expected
    assert run_verdict(judged, problems or not_run) is expected  # type: ignore[arg-type]
    # any other top-level flag is believed by no one: the run is UNKNOWN, saying why
    for flag in (True, False, "unknown", None, "yes", 1):
        if flag is doc["valid"] or (flag == "unknown" and doc["valid"] == "unknown"):
            continue
        edited = proven({**doc, "valid": flag})
        assert edited.valid is None and not edited.flag_agrees
        why = edited.disagreement("runs/t/1")
        assert why is not None and why.startswith("results.json does not match its checkers")
        assert why.endswith("re-judge it with `sealcheck check runs/t/1`")


def test_an_invalid_run_edited_to_valid_is_unknown_naming_both() -> None:
    checkers = {n: {"valid": False} for n in ("completeness", "prefix", "sealed_state")}
    doc = {"valid": True, "inputs": {"complete": True, "problems": []}, "checkers": checkers}
    shown = proven(doc)
    assert (shown.checkers, shown.valid) == (False, None)
    assert shown.disagreement("runs/chaos/20261129T101500") == (
        "results.json does not match its checkers (top-level valid: true, its checkers: "
        "invalid): the file was changed after the run; re-judge it with `sealcheck check "
        "runs/chaos/20261129T101500`"
    )


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        ({"valid": True}, None),  # no checker: nothing was judged
        ({"valid": True, "checkers": "all fine"}, None),
        ({"valid": True, "checkers": {"a": {"valid": True}, "b": "fine"}}, None),
        ({"valid": True, "checkers": {"a": {"valid": "yes"}}}, None),
        ({"valid": True, "checkers": {"a": {"valid": True}}, "inputs": {"complete": False}}, None),
        ({"valid": True, "checkers": {"a": {"valid": True}}, "not_run": ["b"]}, None),
        ({"valid": True, "checkers": {"a": {"valid": True}, "b": {"valid": NA}}}, True),
        ({"valid": False, "checkers": {"a": {"valid": False}, "b": {"valid": "x"}}}, False),
    ],
)
def test_a_file_of_an_unexpected_shape_proves_no_more_than_its_checkers(
    doc: dict[str, Any], expected: bool | None
) -> None:
    assert checkers_verdict(doc) is expected


def test_a_report_that_no_longer_matches_its_results_makes_the_run_unknown(
    tmp_path: Path,
) -> None:
    checkers = {"completeness": {"valid": True}}
    doc = {"valid": True, "inputs": {"complete": True, "problems": []}, "checkers": checkers}
    assert report_verdict(tmp_path / "report.html") is None  # no report: nothing to compare
    for word in VERDICT_WORDS.values():
        write_plain_report(tmp_path, word, ["why"])
        assert report_verdict(tmp_path / "report.html") == word
    shown = proven(doc, report_verdict(tmp_path / "report.html"))  # UNKNOWN beside VALID
    assert (shown.checkers, shown.flag_agrees, shown.valid) == (True, True, None)
    why = shown.disagreement("r")
    assert why is not None
    assert why.startswith(
        "results.json does not match report.html (results.json: valid, report.html: UNKNOWN)"
    )
    (tmp_path / "report.html").write_text("<html>a report from before reports said</html>")
    assert proven(doc, report_verdict(tmp_path / "report.html")).valid is True


def _stored(archive: Path, doc: dict[str, Any], report: str | None) -> Path:
    run = archive / "chaos" / "20261129T101500"
    run.mkdir(parents=True)
    (run / "results.json").write_text(json.dumps(doc))
    if report is not None:
        write_plain_report(run, report, [])
    return run


@pytest.mark.parametrize(
    ("flag", "report"), [(True, "INVALID"), (True, None), (False, "VALID"), (False, "UNKNOWN")]
)
def test_every_reader_shows_a_changed_file_as_unknown_saying_why(
    tmp_path: Path, flag: bool, report: str | None
) -> None:
    """The checkers say INVALID; the flag or the report says otherwise."""
    checkers = {"completeness": {"valid": False}, "prefix": {"valid": True}}
    doc = {"valid": flag, "inputs": {"complete": True, "problems": []}, "checkers": checkers}
    run = _stored(tmp_path, doc, report)
    consistent = flag is False and report in (None, "INVALID")
    assert not consistent
    row = read_run(tmp_path, run)
    assert row.state == "UNKNOWN" and row.mismatch is not None and row.reason == row.mismatch
    assert f"`sealcheck check {run}`" in row.mismatch
    assert row.failing == ["completeness"]  # what its checkers say is still shown
    res = read_result(run, 1, 1, "")
    assert res.verdict == "UNKNOWN" and res.reason == row.mismatch
    [summary] = list_runs(tmp_path)
    assert (summary.valid, summary.reason) == ("unknown", row.mismatch)


def test_files_that_agree_show_what_their_checkers_prove(tmp_path: Path) -> None:
    checkers = {"completeness": {"valid": False}, "prefix": {"valid": True}}
    doc = {"valid": False, "inputs": {"complete": True, "problems": []}, "checkers": checkers}
    run = _stored(tmp_path, doc, "INVALID")
    row = read_run(tmp_path, run)
    assert (row.state, row.mismatch, row.reason) == ("INVALID", None, None)
    assert read_result(run, 1, 1, "").verdict == "INVALID"
    assert list_runs(tmp_path)[0].valid is False


@pytest.mark.parametrize("flag", [True, False, "unknown"])
def test_the_full_report_records_the_verdict_it_shows(tmp_path: Path, flag: Any) -> None:
    from sealcheck.report.report import write_report

    doc = {"valid": flag, "checkers": {"prefix": {"valid": flag}}}
    (tmp_path / "results.json").write_text(json.dumps(doc))
    write_report(tmp_path)
    word = report_verdict(tmp_path / "report.html")
    assert word == {True: "VALID", False: "INVALID", "unknown": "UNKNOWN"}[flag]
    assert proven(doc, word).disagreement("r") is None
