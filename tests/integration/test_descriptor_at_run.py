"""A descriptor that passes the check before the run but fails with the run's own values — its
``output(run)`` once the run's directory exists, its ``command(run)`` once the job's own does —
ends the run with one line naming the method and the exception, exit 254 (the user's mistake,
not the harness's), the reason in the run's history, and nothing left running (real Kafka)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sealcheck.infra import cleanup
from tests.cli_runs import sealcheck_with_module

pytestmark = pytest.mark.integration

MODULE = """
import sys
from dataclasses import dataclass
from sealcheck import DeltaOutput, Job


@dataclass(frozen=True)
class LateOutput(Job):
    def command(self, run):
        return [sys.executable, "-c", "import time; time.sleep(600)"]

    def output(self, run):
        if run.dir.parent.exists():  # the run's work/: only once the run started
            raise RuntimeError("the table moved")
        return DeltaOutput(run.dir / "checkpoint", run.dir / "table", key="id")


@dataclass(frozen=True)
class LateCommand(LateOutput):
    def command(self, run):
        if run.dir.exists():  # the job's directory: only once the harness made it
            raise RuntimeError("no launcher found")
        return super().command(run)

    def output(self, run):
        return DeltaOutput(run.dir / "checkpoint", run.dir / "table", key="id")
"""


@pytest.mark.parametrize(
    ("factory", "said"),
    [
        ("LateOutput", "LateOutput.output(run) raised RuntimeError: the table moved"),
        ("LateCommand", "LateCommand.command(run) raised RuntimeError: no launcher found"),
    ],
)
def test_a_descriptor_failing_with_the_runs_values_ends_the_run_in_one_line(
    tmp_path: Path, factory: str, said: str
) -> None:
    runs = tmp_path / "runs"
    flags = ["--system", f"late_jobs:{factory}", "--nemesis", "kill", "--spark", "local"]
    argv = ["run", "--runs", str(runs), "--no-progress", *flags]
    proc = sealcheck_with_module(tmp_path, "late_jobs", MODULE, *argv)
    assert proc.returncode == 254, proc.stdout + proc.stderr
    line = f"sealcheck run: {said}: fix the descriptor (it was called with the run's own values"
    assert proc.stderr.startswith(line) and proc.stderr.count("\n") == 1, proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    run_dir = (runs / "latest").resolve()
    ops = [json.loads(x) for x in (run_dir / "history.jsonl").read_text().splitlines()]
    reason = proc.stderr.removeprefix("sealcheck run: ").strip()
    assert ops[0]["f"] == "run"  # op 0: whose history this is
    assert [(o["f"], o["value"]["reason"]) for o in ops[1:]] == [("never-started", reason)]
    assert not [p for p in cleanup.leftovers() if p.run == str(run_dir)]  # Kafka stopped
    assert "kafka" in (run_dir / "logs" / "kafka-1.log").read_text().lower()  # it had started
