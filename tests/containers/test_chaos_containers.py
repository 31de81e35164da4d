"""`sealcheck run --backend containers`: three brokers, PostgreSQL and the pipeline in
containers, with a kill, a pause, a real partition and a broker kill, a lost commit reply and
a zombie writer. The correct pipeline is valid; the deliberately broken one is invalid with the
right anomaly; a harness killed mid-run
leaves no container or network behind once `sealcheck cleanup` ran."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sealcheck.rundir.history import History
from tests.cli_runs import labelled

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.containers
FAULTS = ["--nemesis", "kill,pause,partition,kill-kafka", "--interval", "6"]


def run(store: Path, *flags: str) -> tuple[int, str, Path]:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "sealcheck",
            "run",
            "--backend",
            "containers",
            "--runs",
            str(store),
            "--no-progress",
            "--rate",
            "200",
            *flags,
        ],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=ROOT,
    )
    return proc.returncode, proc.stdout + proc.stderr, (store / "latest").resolve()


def test_containers_chaos_run_is_valid(docker_engine: None, tmp_path: Path) -> None:
    code, out, run_dir = run(
        tmp_path, "--name", "c-valid", "--seed", "2", "--duration", "30", *FAULTS
    )
    assert code == 0, out[-3000:]
    history = History.load(run_dir / "history.jsonl").ops
    done = [o for o in history if o["process"] == "nemesis" and o["type"] == "info"]
    cuts = [o["value"] for o in done if o["f"] == "start-partition"]
    assert cuts and all(c.get("rules", 0) > 0 for c in cuts), cuts
    assert any(o["f"] == "kill-broker" and o["value"].get("killed") for o in done)
    assert any(o["f"] == "caught-up" for o in history)
    setup = next(o for o in history if o["f"] == "setup")["value"]
    assert setup["backend"] == "containers" and setup["bootstrap"].count(":9092") == 3
    assert (run_dir / "export" / "updates.parquet").exists()  # exported from PostgreSQL
    results = json.loads((run_dir / "results.json").read_text())
    assert results["inputs"]["complete"] is True  # the export's digest is in the history
    counts = results["checkers"]["sealed_state"]["counts"]  # captured from PostgreSQL
    assert counts["data_steps_captured"] == counts["data_steps_sealed"] > 0, counts
    assert (run_dir / "logs" / "postgres.log").exists()
    assert labelled() == []


@pytest.mark.nightly  # CI: test_partitions.py cuts a commit's reply and sees it happen
def test_a_lost_commit_reply_on_containers(docker_engine: None, tmp_path: Path) -> None:
    """A commit whose reply is cut: PostgreSQL commits, the caught incarnation hears nothing
    for the blackout. The correct pipeline stays valid."""
    flags = ("--name", "c-reply", "--seed", "3", "--duration", "18")
    code, out, run_dir = run(tmp_path, *flags, "--nemesis", "lose-commit-reply")
    assert code == 0, out[-3000:]
    ops = History.load(run_dir / "history.jsonl").ops
    info = [o["value"] for o in ops if o["type"] == "info"]
    placed = {v["action"]: v["pid"] for v in info if v.get("cut") == "commit-reply"}
    caught = [
        placed[v["action"]]
        for v in info
        if v.get("f") == "cut-commit-reply" and v.get("outcome") == "happened"
    ]
    assert caught, out[-3000:]  # a commit went out under a cut: its reply was dropped
    # What the caught incarnation does then is its own business, and both happen: it gives up
    # (its TCP user time-out, exit 1) and a successor learns the outcome from the store, or
    # its connection outlives the blackout and the reply arrives late. Either way: valid.
    exits = {o["value"]["pid"]: o["value"]["code"] for o in ops if o["f"] == "sut-exit"}
    assert all(exits.get(pid) in (0, 1) for pid in caught), (caught, exits)
    assert labelled() == []


@pytest.mark.nightly  # CI: the zombie runs of test_chaos.py (both variants)
def test_a_zombie_writer_on_containers_is_fenced(docker_engine: None, tmp_path: Path) -> None:
    """The zombie nemesis on containers: the stalled incarnation's container and its successor
    run side by side; when both write, fencing stops one (exit 3). Valid."""
    flags = ("--name", "c-zombie", "--seed", "4", "--duration", "24", "--interval", "6")
    code, out, run_dir = run(tmp_path, *flags, "--nemesis", "zombie")
    assert code == 0, out[-3000:]
    ops = History.load(run_dir / "history.jsonl").ops
    started = [o for o in ops if o["f"] == "zombie-start" and o["type"] == "info"]
    assert any(o["value"]["outcome"] == "happened" for o in started), out[-3000:]
    codes = [o["value"]["code"] for o in ops if o["f"] == "sut-exit"]
    assert 3 in codes, codes  # two writers met: one was fenced
    assert labelled() == []


@pytest.mark.nightly  # 5 min; CI catches a broken pipeline locally (test_chaos.py)
def test_containers_broken_pipeline_is_invalid(docker_engine: None, tmp_path: Path) -> None:
    """A pipeline that retries a write whose reply was lost (reconnecting, at the upper it
    sees then) writes the step twice: only a lost reply reaches that bug."""
    code, out, run_dir = run(
        tmp_path,
        "--name",
        "c-broken",
        "--seed",
        "4",
        "--duration",
        "18",
        "--nemesis",
        "lose-commit-reply",
        "--broken",
        "retry-unknown-commits",
    )
    assert code == 1, out[-3000:]  # it reconnected after the lost reply and wrote again
    results = json.loads((run_dir / "results.json").read_text())
    assert results["checkers"]["diff_of_one"]["anomaly_counts"].get("diff-not-0-or-1", 0) >= 1
    assert labelled() == []


def test_a_killed_harness_leaves_no_containers_after_cleanup(
    docker_engine: None, tmp_path: Path
) -> None:
    harness = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "sealcheck",
            "run",
            "--backend",
            "containers",
            "--runs",
            str(tmp_path),
            "--no-progress",
            "--name",
            "c-killed",
            "--duration",
            "60",
        ],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    history = tmp_path / "latest" / "history.jsonl"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if history.exists() and '"f":"sut-start"' in history.read_text():
            break
        time.sleep(0.5)
    else:
        harness.kill()
        pytest.fail("the run never started its pipeline")
    assert labelled() != []
    os.kill(harness.pid, signal.SIGKILL)
    harness.wait()
    out = subprocess.run(
        [sys.executable, "-m", "sealcheck", "cleanup", "--runs", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "removed container " in out and " removed" in out.splitlines()[-1]
    assert labelled() == []
