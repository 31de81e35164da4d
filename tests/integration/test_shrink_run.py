"""`sealcheck shrink` on a real INVALID run: a pipeline that re-appends its last step after any
restart, under two kills; the shrink keeps one kill and a shorter run, every candidate a real
run, and its result replays."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_runs import ROOT, sealcheck_run

pytestmark = [pytest.mark.integration, pytest.mark.nightly]  # nine real runs: 5 minutes


def test_shrink_keeps_one_kill_and_replays(tmp_path: Path) -> None:
    flags = ["--seed", "4", "--duration", "12", "--interval", "4", "--nemesis", "kill,pause"]
    code, out, run_dir = sealcheck_run(
        tmp_path, *flags, "--broken", "reappend-after-restart", "--final-timeout", "60"
    )
    assert code == 1, out[-3000:]
    planned = json.loads((run_dir / "test.json").read_text())["schedule"]
    assert sum(a["f"] == "kill-sut" for a in planned) >= 1 and len(planned) >= 2, planned
    argv = [sys.executable, "-m", "sealcheck", "shrink", str(run_dir), "--max-runs", "8"]
    argv += [
        "--runs-per-candidate",
        "1",
        "--confirm",
        "1",
        "--kind",
        "unique_key:key-with-two-values",
    ]
    shrink = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=1500)
    assert shrink.returncode == 0, shrink.stdout[-3000:] + shrink.stderr[-2000:]
    summary = json.loads((run_dir / "shrink" / "summary.json").read_text())
    minimal = summary["minimal"]
    # the bug needs a restart: one kill is enough, and nothing else is
    assert [a["f"] for a in minimal] == ["kill-sut"], summary
    # then a simpler value: the run ends one interval after the kill it kept
    assert summary["duration_s"] == min(12.0, round(minimal[0]["at_s"] + 4, 3)), summary
    assert summary["reproduced"]["hits"] >= 1, summary
    outcomes = [
        json.loads(x) for x in (run_dir / "shrink" / "outcomes.jsonl").read_text().splitlines()
    ]
    assert len(outcomes) == summary["runs_used"] <= 8
    assert all(Path(o["run_dir"], "results.json").exists() for o in outcomes)  # real runs
    saved = json.loads((run_dir / "shrink" / "minimal" / "test.json").read_text())
    assert saved["schedule"] == minimal and saved["config"]["broken"] == "reappend-after-restart"
