"""``sealcheck run`` ended by SIGTERM (a ``timeout``, a CI job's end, ``kill``) tears the run down
as Ctrl-C does: no process of the run is left, not even a grandchild of the job's frozen by a
``pause`` (before, SIGTERM ended the harness at once: its children died with it, a paused JVM
the job had started did not).

The job is the tiny SQLite job of :mod:`tests.integration.tiny_sqlite_job` started by a shell
that also starts a ``sleep`` beside it: a grandchild of the harness, in the incarnation's process
group, as a Spark job's JVM is.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from sealcheck import Job, JobRun, SQLiteOutput
from sealcheck.infra import cleanup
from tests.product import ROOT

pytestmark = pytest.mark.integration

JOB = Path(__file__).with_name("tiny_sqlite_job.py")


@dataclass(frozen=True)
class WithGrandchild(Job):
    """The tiny SQLite job, and a ``sleep`` its shell starts beside it."""

    name = "with-grandchild"

    def command(self, run: JobRun) -> list[str]:
        job = shlex.join([sys.executable, str(JOB), run.bootstrap, run.topic, str(run.dir / "db")])
        return ["sh", "-c", f"sleep 600 & {job}"]

    def output(self, run: JobRun) -> SQLiteOutput:
        return SQLiteOutput(run.dir / "db", "accounts", "id", value="v", settle_s=5)


def _ops(history: Path) -> list[dict[str, object]]:
    lines = history.read_text().splitlines() if history.exists() else []
    return [json.loads(line) for line in lines[:-1]]  # the last may be half written


def test_sigterm_tears_the_run_down_with_a_paused_grandchild(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    flags = ["--system", "tests.integration.test_sigterm:WithGrandchild", "--nemesis", "pause"]
    flags += ["--duration", "60", "--interval", "20", "--keys", "50", "--rate", "50"]
    flags += ["--set", "workload.bad_ratio=0"]  # the tiny job stores a keyless record under NULL
    harness = subprocess.Popen(
        [sys.executable, "-m", "sealcheck", "run", "--runs", str(tmp_path / "runs"),
         "--no-progress", *flags],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    history = tmp_path / "runs" / "latest" / "history.jsonl"
    deadline = time.monotonic() + 300
    try:
        while time.monotonic() < deadline and harness.poll() is None:
            if any(o["f"] == "pause-sut" and o["type"] == "info" for o in _ops(history)):
                break  # the job and its grandchild are frozen now
            time.sleep(0.2)
        else:
            pytest.fail(f"the pause never happened: {harness.communicate(timeout=60)[0]}")
        run_dir = (tmp_path / "runs" / "latest").resolve()
        assert [p for p in cleanup.tagged() if p.run == str(run_dir)]  # the run's processes
        harness.send_signal(signal.SIGTERM)
        output, _ = harness.communicate(timeout=180)
    finally:
        if harness.poll() is None:
            harness.kill()
            harness.wait()
    left = [p for p in cleanup.tagged() if p.run == str(run_dir)]
    for p in left:  # never leave them to the next test, whatever this one says
        os.kill(p.pid, signal.SIGKILL)
    assert harness.returncode == 143, output
    assert output.rstrip().endswith("sealcheck: terminated (SIGTERM)"), output
    assert "Traceback" not in output
    assert not left, left
