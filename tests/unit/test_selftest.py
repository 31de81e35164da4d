"""``sealcheck selftest`` keeps a ledger of finished runs, so an interrupted matrix resumes
where it stopped. (Unit tests: the runs are fakes that write what a real run leaves behind.)"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from sealcheck.harness.campaigns import selftest


def _fake_runs(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    calls: list[tuple[str, int]] = []

    def run(runs_dir: Path, variant: str, seed: int, extra: list[str]) -> Path:
        calls.append((variant, seed))
        n = 1 + sum(1 for _ in runs_dir.glob(f"{variant}-{seed}-*"))
        run_dir = runs_dir / f"{variant}-{seed}-{n}"
        run_dir.mkdir(parents=True)
        bad = variant != selftest.CORRECT
        anomaly = {"context": {"sealed_by_ns": 7_000_000_000}}
        checkers = {"unique_key": {"valid": not bad, "anomalies": [anomaly] if bad else []}}
        (run_dir / "results.json").write_text(json.dumps({"valid": not bad, "checkers": checkers}))
        ops = [{"f": "warmed-up", "time": 2_000_000_000}, {"f": "inputs", "time": 9_000_000_000}]
        (run_dir / "history.jsonl").write_text("".join(json.dumps(o) + "\n" for o in ops))
        return run_dir

    monkeypatch.setattr(selftest, "_run", run)
    return calls


def _args(
    runs: Path, seeds: int = 2, fresh: bool = False, flags: list[str] | None = None
) -> argparse.Namespace:
    return argparse.Namespace(
        list=False,
        seeds=seeds,
        system="upsert-source",
        variants="rewind-bindings",
        runs=str(runs),
        fresh=fresh,
        min_caught=2,
        run_flags=flags or [],
    )


def test_a_second_selftest_takes_finished_runs_from_the_ledger(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _fake_runs(monkeypatch)
    assert selftest.run_selftest(_args(tmp_path, seeds=1)) == 0
    assert calls == [("correct", 1), ("rewind-bindings", 1)]
    with (tmp_path / "selftest.jsonl").open("a") as fh:
        fh.write('{"variant": "correct", "se')  # a line cut by a crash
    calls.clear()
    assert selftest.run_selftest(_args(tmp_path, seeds=2)) == 0  # seed 1 from the ledger
    assert calls == [("correct", 2), ("rewind-bindings", 2)]
    matrix = {c["variant"]: c for c in json.loads((tmp_path / "selftest.json").read_text())}
    assert matrix["rewind-bindings"]["caught"] == 2 and matrix["correct"]["caught"] == 0
    assert matrix["rewind-bindings"]["detect_s"] == [5.0, 5.0]  # sealed 7 s, warmed up at 2 s


def test_other_run_flags_or_fresh_run_everything_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    calls = _fake_runs(monkeypatch)
    selftest.run_selftest(_args(tmp_path, seeds=1))
    assert "(1 seeds, default run configuration, " in capsys.readouterr().out
    calls.clear()
    selftest.run_selftest(_args(tmp_path, seeds=1, flags=["--duration", "30"]))
    assert len(calls) == 2  # a different configuration is a different matrix
    assert "(1 seeds, --duration 30, " in capsys.readouterr().out  # not the default run's
    calls.clear()
    selftest.run_selftest(_args(tmp_path, seeds=1, fresh=True))
    assert len(calls) == 2


def test_a_ledger_entry_whose_run_is_gone_is_run_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _fake_runs(monkeypatch)
    selftest.run_selftest(_args(tmp_path, seeds=1))
    (tmp_path / "correct-1-1" / "results.json").unlink()
    calls.clear()
    selftest.run_selftest(_args(tmp_path, seeds=1))
    assert calls == [("correct", 1)]


def test_detection_takes_the_first_moment_the_history_showed_an_anomaly(tmp_path: Path) -> None:
    observed = {"observed": {"time": 4_500_000_000, "value": {"data": 2, "bindings": 1}}}
    anomalies = [{"context": {"sealed_by_ns": 9_000_000_000}}, {"context": observed}, {}]
    results = {"valid": False, "checkers": {"frontiers": {"valid": False, "anomalies": anomalies}}}
    (tmp_path / "results.json").write_text(json.dumps(results))
    ops = [{"f": "warmed-up", "time": 2_000_000_000}, {"f": "inputs", "time": 30_000_000_000}]
    (tmp_path / "history.jsonl").write_text("".join(json.dumps(o) + "\n" for o in ops))
    assert selftest.detection(tmp_path) == (False, ["frontiers"], 2.5)
    results["checkers"]["frontiers"]["anomalies"] = [{"context": {}}]  # no time: the run's end
    (tmp_path / "results.json").write_text(json.dumps(results))
    assert selftest.detection(tmp_path) == (False, ["frontiers"], 28.0)


def test_a_harmless_variant_must_stay_valid_like_the_correct_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """delta-streaming's no-idempotent-writes is expected valid: caught, the self-test fails;
    valid, it passes (the fake runs flag every variant but the correct one)."""
    _fake_runs(monkeypatch)
    args = _args(tmp_path, seeds=1)
    args.system, args.variants = "delta-streaming", "drop-duplicates"
    assert selftest.run_selftest(args) == 0
    args.variants, args.runs = "no-idempotent-writes", str(tmp_path / "b")
    assert selftest.run_selftest(args) == 1


def test_a_run_of_chosen_checkers_counts_by_the_checkers_that_ran(tmp_path: Path) -> None:
    inputs = {"complete": True}
    checkers = {"prefix": {"valid": True}, "sealed_state": {"valid": "not applicable"}}
    doc = {"valid": "unknown", "not_run": ["unique_key"], "inputs": inputs, "checkers": checkers}
    (tmp_path / "results.json").write_text(json.dumps(doc))
    assert selftest.detection(tmp_path) == (True, [], None)
    for unknown in (  # unknown stays unknown: a chosen checker unknown, incomplete inputs, or
        {**doc, "checkers": {"prefix": {"valid": "unknown"}}},  # every checker ran
        {**doc, "inputs": {"complete": False}},
        {**doc, "not_run": []},
    ):
        (tmp_path / "results.json").write_text(json.dumps(unknown))
        assert selftest.detection(tmp_path) == (None, [], None)
