"""The sample user repository (examples/user_repo) run as a user runs it — its own pytest
session with the plugin loaded from the installed entry point, real Kafka, the real pipeline
and faults: green on the correct pipeline, red (with the anomalies, the report and the
reproduce command) on a broken variant."""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

pytest_plugins = ["pytester"]
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "user_repo" / "test_upsert_job.py"


@pytest.fixture
def user_repo(pytester: pytest.Pytester) -> pytest.Pytester:
    shutil.copy(EXAMPLE, pytester.path / EXAMPLE.name)
    return pytester


@pytest.mark.nightly  # the plugin's red path stays in CI; VALID runs are covered there
def test_the_example_is_green_on_the_correct_pipeline(user_repo: pytest.Pytester) -> None:
    xml = user_repo.path / "chaos.xml"
    runs = user_repo.path / "runs"
    res = user_repo.runpytest_subprocess(
        "-v", f"--junitxml={xml}", f"--sealcheck-runs={runs}", timeout=900
    )
    res.assert_outcomes(passed=1)
    props = {p.get("name"): p.get("value") for p in ET.parse(xml).iter("property")}
    assert props["sealcheck_verdict"] == "VALID" and props["sealcheck_seed"] == "3"
    assert Path(props["sealcheck_report"]).is_file()  # the run's report is really there


def test_the_example_is_red_on_a_broken_variant(
    user_repo: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EXAMPLE_VARIANT", "reappend-after-restart")
    res = user_repo.runpytest_subprocess(f"--sealcheck-runs={user_repo.path / 'runs'}", timeout=900)
    res.assert_outcomes(failed=1)
    res.stdout.fnmatch_lines(
        [
            "*sealcheck verdict: INVALID (seed 3)*",
            "*failing checkers:*unique_key*",
            "*report: *report.html*",
            "*reproduce: sealcheck run *--broken reappend-after-restart*",
        ]
    )
