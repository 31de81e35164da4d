"""The report leads with the first wrong step: anomalies ordered by step, then checker (those
without a step last) in the report, in ``ChaosResult`` and in the pytest plugin's message
(printed once, and JUnit properties without pytest's xunit2 warning); the keys' story
highlights each key's first bad update, even when its step was compacted away; completeness
anomalies carry their context."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from sealcheck.checkers import run_checkers
from sealcheck.checkers.facts import sealed_ranges
from sealcheck.checkers.inputs import RunData
from sealcheck.checkers.result import Anomaly
from sealcheck.checkers.stories import stories
from sealcheck.harness.campaigns.verdicts import read_result
from sealcheck.report.explain import context_lines
from sealcheck.report.report import render
from sealcheck.rundir.history import History
from tests.runs import build_run, compacted, stored_run, with_updates
from tests.unit.test_pytest_plugin import STAND_IN

pytest_plugins = ["pytester"]


def _anomaly(kind: str, step: int | None, key: str, collection: str | None = "data") -> dict:
    return {"kind": kind, "collection": collection, "key": key, "step": step, "context": {}}


RESULTS: dict[str, Any] = {
    "valid": False,
    "inputs": {"complete": True, "problems": [], "notes": []},
    "checkers": {
        "completeness": {"valid": False, "anomalies": [_anomaly("kafka-lost-write", None, "k9")]},
        "unique_key": {"valid": False, "anomalies": [_anomaly("key-with-two-values", 7, "k1")]},
        "sealed_state": {
            "valid": False,
            "anomalies": [_anomaly("state-mismatch", 9, "k2"), _anomaly("state-mismatch", 3, "k3")],
        },
        "bindings": {
            "valid": False,
            "anomalies": [_anomaly("offset-went-back", 3, "0", "bindings")],
        },
        "as_of": {"valid": "not applicable", "anomalies": []},
    },
}
ORDER = [
    ("bindings", 3),
    ("sealed_state", 3),
    ("unique_key", 7),
    ("sealed_state", 9),
    ("completeness", None),
]


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    run_dir = stored_run(tmp_path)
    (run_dir / "results.json").write_text(json.dumps(RESULTS))
    (run_dir / "test.json").write_text(json.dumps({"config": {"name": "order", "seed": 4}}))
    return run_dir


def test_the_report_lists_anomalies_by_step_then_checker(run_dir: Path) -> None:
    page = render(run_dir)
    rows = re.findall(r'<tr id="anomaly-(\d+)"><td>\d+</td><td>(\w+)</td><td>[\w-]+</td>', page)
    assert [int(i) for i, _ in rows] == list(range(len(ORDER)))
    assert [c for _, c in rows] == [c for c, _ in ORDER]


def test_chaos_result_and_its_summary_lead_with_the_first_wrong_step(run_dir: Path) -> None:
    res = read_result(run_dir, 4, 1, "")
    assert [(a.checker, a.step) for a in res.anomalies] == ORDER
    assert "as_of" not in res.failing_checkers
    lines = res.summary().splitlines()
    assert lines[2].strip() == "bindings: offset-went-back at step 3 key 0"


def test_an_anomaly_line_names_the_version_that_ran_when_its_step_was_sealed(
    run_dir: Path,
) -> None:
    results = json.loads((run_dir / "results.json").read_text())
    [wrong] = results["checkers"]["unique_key"]["anomalies"]
    start = {"time": 1, "f": "sut-start", "value": {"incarnation": 2, "version": "v2"}}
    wrong["context"] = {"batch": "batch 7", "last_sut_start": start}
    (run_dir / "results.json").write_text(json.dumps(results))
    [line] = [a.line() for a in read_result(run_dir, 4, 1, "").anomalies if a.step == 7]
    assert line == "unique_key: key-with-two-values at step 7 (batch 7) key k1 (v2 running)"


def test_the_failure_message_is_printed_once(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(STAND_IN)
    pytester.makepyfile(
        """
        def test_asserted(sealcheck):
            sealcheck("upsert-source", broken="x").assert_valid()

        def test_plain(sealcheck):
            assert sealcheck("upsert-source", broken="x").valid
        """
    )
    # -rN: no short summary, which repeats each message (and is not cut to the terminal's
    # width when CI is set)
    res = pytester.runpytest("-p", "no:cacheprovider", "-rN")
    res.assert_outcomes(failed=2)
    out = res.stdout.str()
    asserted, plain = out.split("_ test_plain _")
    assert asserted.count("sealcheck verdict: INVALID") == 1
    assert plain.count("sealcheck verdict: INVALID") == 1  # the section, for a plain assert


def test_junit_properties_per_test_case_under_xunit1_without_warning(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(STAND_IN)
    pytester.makepyfile("def test_job(sealcheck):\n    sealcheck('upsert-source', seed=5)\n")
    xml = pytester.path / "out.xml"
    res = pytester.runpytest(f"--junitxml={xml}", "-o", "junit_family=xunit1")
    res.assert_outcomes(passed=1)
    res.stdout.no_fnmatch_line("*incompatible with junit_family*")
    case = ET.parse(xml).find(".//testcase")
    assert case is not None
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert props["sealcheck_seed"] == "5" and props["sealcheck_verdict"] == "VALID"


PAIRS = [(b"k%d" % (i % 4), b'{"i": %d}' % i) for i in range(40)]


def _wrong_value_at(run: RunData, key: bytes, step: int) -> tuple[RunData, int]:
    """``run`` with the value ``key`` was given at ``step`` (or the next step with one)
    replaced in ``data``: the step the bug is at."""
    ups = run.updates
    inserts = ups.filter(
        (pl.col("collection") == "data") & (pl.col("key") == key) & (pl.col("diff") == 1)
    )
    at = int(inserts.filter(pl.col("ts") >= step)["ts"].min())  # type: ignore[arg-type]
    bad = (pl.col("collection") == "data") & (pl.col("key") == key) & (pl.col("ts") == at)
    wrong = pl.when(bad & (pl.col("diff") == 1)).then(pl.lit(b'{"i": -1}')).otherwise("value")
    return with_updates(run, ups.with_columns(wrong.alias("value"))), at


def _story_of(run: RunData, key: str, step: int) -> Any:
    anomaly = Anomaly("state-mismatch", "data", key, step)
    told, why = stories(run, sealed_ranges(run), [anomaly])
    assert told, why
    return told[0]


def test_the_story_highlights_the_first_bad_update() -> None:
    run, at = _wrong_value_at(build_run(PAIRS, partitions=1, step_size=3), b"k1", 4)
    story = _story_of(run, "k1", at)
    hits = [u for u in story.updates if u.hit]
    assert story.bad_step == at
    assert [(u.step, u.value, u.diff) for u in hits] == [(at, '{"i": -1}', 1)]
    assert all(r.step == at for r in story.records if r.hit)


def test_the_story_highlights_it_when_the_step_was_compacted_away() -> None:
    run, at = _wrong_value_at(build_run(PAIRS, partitions=1, step_size=3), b"k1", 4)
    since = at + 3
    merged = compacted(run, since, ["bindings", "data", "errors"])
    assert not merged.updates.filter(pl.col("ts") == at).height  # the step is gone
    story = _story_of(merged, "k1", at)
    hits = [u for u in story.updates if u.hit]
    assert story.bad_step == since and hits
    assert all(u.step == since for u in hits)
    assert any(u.value == '{"i": -1}' for u in hits)


def test_a_lost_update_highlights_the_next_one() -> None:
    run = build_run(PAIRS, partitions=1, step_size=3)
    ups = run.updates.with_row_index("row")
    lost = ups.filter(
        (pl.col("collection") == "data") & (pl.col("key") == b"k2") & (pl.col("ts") >= 5)
    ).row(0, named=True)
    run = with_updates(run, ups.filter(pl.col("row") != lost["row"]).drop("row"))
    story = _story_of(run, "k2", lost["ts"])
    hits = [u for u in story.updates if u.hit]
    assert story.bad_step == lost["ts"] and len(hits) == 1 and hits[0].step >= lost["ts"]


def test_a_story_without_a_disagreement_highlights_the_first_update_at_its_step() -> None:
    run = build_run(PAIRS, partitions=1, step_size=3)
    story = _story_of(run, "k3", 6)
    hits = [u for u in story.updates if u.hit]
    assert story.bad_step is None and len(hits) == 1 and hits[0].step >= 6
    first = min(u.step for u in story.updates if u.step >= 6)
    assert hits[0].step == first


def _with_fault_before_acks(run: RunData) -> RunData:
    """Every write acknowledged at 5 s, a kill at 2.5 s."""
    kill = {"index": 0, "time": 2_500, "process": "nemesis", "type": "info", "f": "kill"}
    ops = sorted([*run.history.ops, kill], key=lambda o: o["time"])
    acked = run.history.acked.lazy().collect().with_columns(pl.lit(5_000, pl.Int64).alias("time"))
    return RunData(run.topic, run.updates, run.uppers, run.sinces, History(acked, ops))


def test_a_kafka_lost_write_carries_when_it_was_acknowledged_and_the_fault_before() -> None:
    run = _with_fault_before_acks(build_run(PAIRS, partitions=1, step_size=4))
    gone = run.topic.filter(pl.col("partition") == 0).sort("offset").row(3, named=True)
    keep = ~((pl.col("partition") == 0) & (pl.col("offset") == gone["offset"]))
    lost = RunData(run.topic.filter(keep), run.updates, run.uppers, run.sinces, run.history)
    (a,) = run_checkers(lost, ["completeness"]).checkers["completeness"].anomalies
    assert a.kind == "kafka-lost-write" and a.step is None
    assert a.context["acked_ns"] == 5_000 and a.context["last_nemesis"]["f"] == "kill"
    lines = context_lines(a.context)
    assert lines[0] == "write acknowledged at 0.0 s"
    assert any("after kill" in line and "the acknowledgement" in line for line in lines)


def test_a_final_state_mismatch_carries_its_context() -> None:
    run = _with_fault_before_acks(build_run(PAIRS, partitions=1, step_size=4))
    last = run.updates.filter(pl.col("collection") == "data").sort("ts").tail(1)
    dropped = run.updates.join(last, on=run.updates.columns, how="anti")
    res = run_checkers(with_updates(run, dropped), ["completeness"]).checkers["completeness"]
    (a,) = [a for a in res.anomalies if a.kind == "final-state-mismatch"]
    assert a.step == run.uppers["data"] - 1
    assert a.context["last_nemesis"]["f"] == "kill"
    assert a.context["latest_write_acked_ns"] == 5_000
