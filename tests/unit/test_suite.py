"""`sealcheck suite`: the suite file, the matrix it expands to, the budget, repeats and reruns,
and summaries rewritten after every case — with a stand-in for the chaos run (the real runs
are in tests/integration/test_suite_run.py)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sealcheck.harness.campaigns import suite as suite_mod
from sealcheck.harness.campaigns.suite import check_cases, exit_code, failed_cases, run_suite
from sealcheck.harness.campaigns.suite_spec import SuiteError, load_suite, parse_suite
from sealcheck.harness.campaigns.verdicts import ChaosResult

MATRIX = {
    "name": "night",
    "budget_s": 600,
    "settings": {"duration": 10},
    "matrix": [
        {"nemeses": [["kill", "pause"], []], "seeds": "1-2"},
        {
            "systems": ["upsert-source"],
            "nemeses": [["zombie"]],
            "seeds": [7],
            "settings": {"rate": 50},
        },
    ],
}


def test_a_matrix_expands_in_order_with_stable_ids() -> None:
    spec = parse_suite(MATRIX)
    assert [c.id for c in spec.cases] == [
        "upsert-source-local-kill+pause-seed1",
        "upsert-source-local-kill+pause-seed2",
        "upsert-source-local-default-seed1",
        "upsert-source-local-default-seed2",
        "upsert-source-local-zombie-seed7",
    ]
    assert dict(spec.cases[-1].settings) == {"duration": 10, "rate": 50}
    assert spec.cases[2].nemeses is None  # [] is the default mix


@pytest.mark.parametrize(
    ("doc", "said"),
    [
        ({"matrix": [{"seeds": "a-b"}]}, "seeds = 'a-b'"),
        ({"matrix": [{"nemeses": ["kill"]}]}, "write a list of nemesis lists"),
        ({"matrix": [{"sedes": [1]}]}, "unknown key(s) ['sedes']"),
        ({"budget_s": -1, "matrix": [{}]}, "budget_s = -1"),
        ({"name": "x"}, "no [[matrix]] table"),
        ({"matrix": [{"seeds": [1]}, {"seeds": [1]}]}, "appears twice"),
    ],
)
def test_a_bad_suite_is_refused_naming_the_value(doc: dict[str, Any], said: str) -> None:
    with pytest.raises(SuiteError) as err:
        parse_suite(doc)
    assert said in str(err.value)


def test_settings_the_run_would_refuse_are_refused_before_anything_runs() -> None:
    spec = parse_suite({"matrix": [{"nemeses": [["no-such-nemesis"]]}]})
    with pytest.raises(SuiteError, match="upsert-source-local-no-such-nemesis-seed1"):
        check_cases(spec)
    check_cases(parse_suite(MATRIX))  # the good one passes


def test_a_missing_or_broken_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(SuiteError, match="does not exist"):
        load_suite(tmp_path / "nope.toml")
    (tmp_path / "bad.toml").write_text("name = ")
    with pytest.raises(SuiteError, match="cannot be read as TOML"):
        load_suite(tmp_path / "bad.toml")


@pytest.fixture
def stand_in(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[list[str]]:
    """Runs that are INVALID for seed 2, VALID otherwise; the names run, in order."""
    ran: list[str] = []

    def fake(store: Path, name: str, seed: int, nemeses: Any, options: Any, t: float) -> Any:
        ran.append(name)
        run_dir = store / name / "20260101T000000"
        run_dir.mkdir(parents=True)
        (run_dir / "report.html").write_text("<html></html>")
        verdict = "INVALID" if seed == 2 else "VALID"
        failing = ("unique_key",) if seed == 2 else ()
        why = ("<script>alert(1)</script>",) if seed == 2 else ()
        return ChaosResult(verdict, run_dir, seed, 0, failing, problems=why)

    monkeypatch.setattr(suite_mod, "run_chaos", fake)
    yield ran


def test_summaries_name_each_run_and_the_worst_verdict(stand_in: list[str], tmp_path: Path) -> None:
    spec = parse_suite(MATRIX)
    runs = run_suite(spec, tmp_path / "out", 600, say=lambda _: None)
    assert exit_code(runs) == 1 and len(stand_in) == 5
    doc = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert doc["done"] and doc["exit_code"] == 1
    assert [r["verdict"] for r in doc["runs"]] == ["VALID", "INVALID", "VALID", "INVALID", "VALID"]
    xml = ET.parse(tmp_path / "out" / "junit.xml").getroot()
    assert xml.get("failures") == "2" and len(xml.findall("testcase")) == 5
    props = {p.get("name"): p.get("value") for p in xml.find("testcase").iter("property")}
    assert props["sealcheck_seed"] == "1" and props["sealcheck_verdict"] == "VALID"
    html = (tmp_path / "out" / "index.html").read_text()
    assert "&lt;script&gt;" in html and "<script>" not in html  # text, never markup
    assert 'href="runs/upsert-source-local-kill_pause-seed1/20260101T000000/report.html"' in html


def test_a_killed_suite_leaves_a_summary_of_what_ran(
    stand_in: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = suite_mod.run_chaos

    def dies_on_the_third(*args: Any) -> Any:
        if len(stand_in) == 2:
            raise KeyboardInterrupt
        return real(*args)

    monkeypatch.setattr(suite_mod, "run_chaos", dies_on_the_third)
    with pytest.raises(KeyboardInterrupt):
        run_suite(parse_suite(MATRIX), tmp_path / "out", 600, say=lambda _: None)
    doc = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert not doc["done"] and len(doc["runs"]) == 2
    assert "still running" in (tmp_path / "out" / "index.html").read_text()


def test_cases_past_the_budget_are_skipped_and_not_valid(
    stand_in: list[str], tmp_path: Path
) -> None:
    runs = run_suite(parse_suite(MATRIX), tmp_path / "out", 0.0, say=lambda _: None)
    assert {r.verdict for r in runs} == {"SKIPPED"} and stand_in == []
    assert exit_code(runs) == 2  # a suite that did not run is never all valid


def test_repeat_reports_the_reproduction_rate_and_rerun_takes_the_failed(
    stand_in: list[str], tmp_path: Path
) -> None:
    spec = parse_suite(MATRIX)
    run_suite(spec, tmp_path / "first", 600, say=lambda _: None)
    only = failed_cases(tmp_path / "first")
    assert only == {"upsert-source-local-kill+pause-seed2", "upsert-source-local-default-seed2"}
    stand_in.clear()
    run_suite(spec, tmp_path / "again", 600, repeat=3, only=only, say=lambda _: None)
    assert len(stand_in) == 6
    doc = json.loads((tmp_path / "again" / "summary.json").read_text())
    assert doc["rates"]["upsert-source-local-default-seed2"] == {"runs": 3, "invalid": 3}
    assert "Reproduction rate" in (tmp_path / "again" / "index.html").read_text()
    with pytest.raises(SuiteError, match=r"no readable summary\.json"):
        failed_cases(tmp_path / "nowhere")
