"""A checker with nothing to judge is "not applicable" — in results.json, in the CLI's table
and in the report — and never valid: it is left out of the composed verdict, and every reader
of results.json treats it as neither a pass nor a failure. A checker that should have had
input but got none (a run that sealed nothing, wrote nothing) is unknown instead."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import polars as pl
import pytest

from sealcheck.checkers import run_checkers
from sealcheck.checkers.result import NOTHING_SEALED, CheckResult, RunResult
from sealcheck.harness.campaigns.selftest import detection
from sealcheck.harness.campaigns.shrink import anomaly_kinds
from sealcheck.harness.campaigns.verdicts import read_result
from sealcheck.harness.cli import app as cli
from sealcheck.report.report import render
from sealcheck.report.serve import read_run
from sealcheck.rundir.archive import write_plain_report
from sealcheck.rundir.history import History
from sealcheck.rundir.judged import NOT_APPLICABLE
from tests.runs import build_run, final_ops, stored_run


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A complete, valid pipeline run (no export/asof.parquet), judged by ``sealcheck check``."""
    run_dir = stored_run(tmp_path_factory.mktemp("na"))
    (run_dir / "test.json").write_text(json.dumps({"config": {"name": "na", "seed": 11}}))
    assert cli.main(["check", str(run_dir)]) == cli.EXIT_VALID
    return run_dir


def test_zero_snapshots_is_not_applicable_in_results_json(judged: Path) -> None:
    doc = json.loads((judged / "results.json").read_text())
    as_of = doc["checkers"]["as_of"]
    assert as_of["valid"] == NOT_APPLICABLE == "not applicable"
    assert as_of["applicable"] is False and as_of["counts"]["snapshots_judged"] == 0
    assert "asof.parquet" in as_of["error"]
    # the composed verdict of an otherwise valid run stays valid, and says what was left out
    assert doc["valid"] is True and doc["not_applicable"] == ["as_of", "versions"]
    others = {n: c["valid"] for n, c in doc["checkers"].items() if n not in ("as_of", "versions")}
    assert others == dict.fromkeys(others, True)


def test_the_cli_table_says_not_applicable(
    judged: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["check", str(judged)]) == cli.EXIT_VALID
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.strip().startswith("as_of:"))
    assert "not applicable" in row and "valid" not in row.replace("not applicable", "")
    verdict = next(line for line in out.splitlines() if line.startswith("verdict:"))
    assert verdict.startswith("verdict: valid") and "not applicable: as_of" in verdict


def test_the_report_says_not_applicable_never_valid(judged: Path) -> None:
    page = render(judged)
    assert "<td>as_of</td><td>NOT APPLICABLE</td>" in page
    assert "<td>as_of</td><td>VALID</td>" not in page
    assert 'id="not-applicable"' in page and "<b>as_of, versions</b>" in page
    assert "Not valid:" not in page  # not a failure either


def test_every_reader_of_results_json_takes_it_as_neither_pass_nor_failure(judged: Path) -> None:
    doc = json.loads((judged / "results.json").read_text())
    res = read_result(judged, 11, 0, "")
    assert res.verdict == "VALID" and res.failing_checkers == ()
    assert read_run(judged.parent, judged).failing == []
    assert anomaly_kinds(doc) == []
    assert detection(judged)[:2] == (True, [])
    # an INVALID run with as_of not applicable: as_of is not among the failing checkers (its
    # report says INVALID too: one that still said VALID would make the run UNKNOWN)
    doc["valid"] = False
    doc["checkers"]["sealed_state"]["valid"] = False
    (judged / "results.json").write_text(json.dumps(doc))
    report = (judged / "report.html").read_bytes()
    write_plain_report(judged, "INVALID", [])
    try:
        res = read_result(judged, 11, 1, "")
        assert res.verdict == "INVALID" and res.failing_checkers == ("sealed_state",)
        assert read_run(judged.parent, judged).failing == ["sealed_state"]
        assert detection(judged)[1] == ["sealed_state"]
    finally:
        doc["valid"] = True
        doc["checkers"]["sealed_state"]["valid"] = True
        (judged / "results.json").write_text(json.dumps(doc))
        (judged / "report.html").write_bytes(report)


def test_a_not_applicable_result_never_counts_as_valid() -> None:
    na = CheckResult.not_applicable("as_of", "no snapshots")
    assert na.valid is None and not na.applicable and na.word() == "not applicable"
    assert RunResult({"as_of": na}).valid is None  # nothing judged: never valid
    bad = CheckResult("unique_key", False)
    assert RunResult({"as_of": na, "unique_key": bad}).valid is False
    good = CheckResult("unique_key", True)
    assert RunResult({"as_of": na, "unique_key": good}).valid is True
    assert RunResult({"as_of": na, "unique_key": good}, ["history cut"]).valid is None
    assert RunResult({"as_of": na}).to_json()["checkers"]["as_of"]["valid"] == NOT_APPLICABLE


def test_only_not_applicable_checkers_is_unknown() -> None:
    run = build_run([(b"a", b'{"v": 1}'), (b"b", b'{"v": 2}')], step_size=1)
    res = run_checkers(run, ["as_of"])
    assert res.valid is None and res.not_applicable == ["as_of"]
    assert res.to_json()["valid"] == "unknown"


def test_snapshots_offered_but_none_judgeable_are_unknown() -> None:
    run = build_run([(b"a", b'{"v": 1}'), (b"b", b'{"v": 2}')], step_size=1)
    beyond = pl.DataFrame(
        {"collection": ["data"], "ts": [99], "key": [b"a"], "value": [b'{"v": 1}']},
        schema={"collection": pl.String, "ts": pl.Int64, "key": pl.Binary, "value": pl.Binary},
    )
    res = run_checkers(dataclasses.replace(run, asof=beyond), ["as_of"]).checkers["as_of"]
    assert res.applicable and res.valid is None and "none of them could be judged" in str(res.error)


def test_a_run_that_sealed_nothing_is_unknown_not_valid() -> None:
    run = build_run([(b"a", b'{"v": 1}'), (b"b", b'{"v": 2}')], step_size=1)
    nothing = dataclasses.replace(
        run,
        updates=run.updates.clear(),
        uppers=dict.fromkeys(run.uppers, 0),
        asof=None,
    )
    res = run_checkers(nothing)
    for name in ("sealed_state", "bindings", "diff_of_one", "unique_key", "no_phantoms"):
        r = res.checkers[name]
        assert r.applicable and r.valid is None and r.error == NOTHING_SEALED, name
    assert res.valid is False  # the records never sealed are completeness's not-caught-up


def test_a_run_that_wrote_nothing_is_unknown_not_valid() -> None:
    empty = build_run([(b"a", b'{"v": 1}')], step_size=1)
    empty = dataclasses.replace(
        empty,
        topic=empty.topic.clear(),
        updates=empty.updates.clear(),
        uppers=dict.fromkeys(empty.uppers, 0),
        history=History(empty.history.acked.clear(), final_ops(0, 1, {}, 0)),
    )
    res = run_checkers(empty)
    completeness = res.checkers["completeness"]
    assert completeness.valid is None and "nothing was written" in str(completeness.error)
    assert res.valid is None
