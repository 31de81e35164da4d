"""A run's start cleans up only what runs of its own archive (``--runs``) left, naming the run,
and leaves other archives' leftovers alone, saying how to remove them: real processes tagged as
a dead harness's (``SEALCHECK_OWNER`` of a process that is gone), one under this archive (by an
absolute path, and one by a path relative to its working directory, as a harness with a relative
``--runs`` tags them), one under another archive. ``sealcheck cleanup --runs`` of the other
archive then removes the survivor.

An older Sealcheck starting a run elsewhere on this machine took every archive's leftovers: if
it kills one of these first, that is said, and what this harness did is still checked."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console

from sealcheck.harness.cli import app as cli
from sealcheck.harness.run.config import load_config
from sealcheck.harness.run.progress import Display
from sealcheck.harness.run.runner import run_test
from sealcheck.harness.run.test import build_test
from sealcheck.infra import cleanup, procs
from sealcheck.infra.sweep import sweep
from tests.integration.test_never_started import _System

pytestmark = pytest.mark.integration

MINE = "chaos/20261129T101500"
THEIRS = "chaos/20261129T090000"


def _dead_owner() -> str:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    return f"{dead.pid}:0"  # its pid, with a start time no process has


def _tagged(run: str, cwd: Path, owner: str) -> subprocess.Popen[bytes]:
    """A ``sleep`` tagged as a process of ``run``, returned once its tags can be read."""
    env = {**os.environ, procs.RUN_ENV: run, procs.OWNER_ENV: owner}
    proc = subprocess.Popen(["sleep", "300"], env=env, cwd=cwd, start_new_session=True)
    deadline = time.monotonic() + 30
    while proc.pid not in {p.pid for p in cleanup.tagged()} and time.monotonic() < deadline:
        time.sleep(0.05)
    return proc


def _ended(proc: subprocess.Popen[bytes], timeout_s: float = 30.0) -> int | None:
    deadline = time.monotonic() + timeout_s
    while proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    return proc.poll()


@pytest.fixture
def leftovers(tmp_path: Path) -> Iterator[dict[str, subprocess.Popen[bytes]]]:
    """Tagged sleeps of a dead harness: two of runs of ``runs`` (absolute; relative to their
    working directory), one of a run of ``other``, and one of ``runs`` whose harness lives;
    every one killed at the end."""
    dead = _dead_owner()
    for run in (tmp_path / "runs" / MINE, tmp_path / "other" / THEIRS):
        run.mkdir(parents=True)  # a run's directory holds its test.json before any process
        (run / "test.json").write_text("{}")
    procs_ = {
        "mine": _tagged(str(tmp_path / "runs" / MINE), tmp_path, dead),
        "relative": _tagged(f"runs/{MINE}", tmp_path, dead),
        "theirs": _tagged(str(tmp_path / "other" / THEIRS), tmp_path, dead),
        "alive": _tagged(str(tmp_path / "runs" / MINE), tmp_path, procs.owner_token()),
    }
    try:
        yield procs_
    finally:
        for p in procs_.values():
            p.kill()
            p.wait()


def test_a_sweep_takes_only_its_archive_s_leftovers(
    tmp_path: Path, leftovers: dict[str, subprocess.Popen[bytes]]
) -> None:
    before = {n for n, p in leftovers.items() if p.poll() is not None}  # taken elsewhere
    swept = sweep(tmp_path / "runs")
    pids = {n: p.pid for n, p in leftovers.items()}
    removed = {int(x.what.split()[1].rstrip(":")) for x in swept.removed}
    left = {int(x.what.split()[1].rstrip(":")) for x in swept.left if x.kind == "process"}
    assert pids["theirs"] not in removed and pids["alive"] not in removed | left
    assert {pids["mine"], pids["relative"]} - {pids[n] for n in before} <= removed
    assert {x.run for x in swept.removed} <= {(tmp_path / "runs" / MINE).resolve()}
    assert _ended(leftovers["mine"]) == -9 and _ended(leftovers["relative"]) == -9
    assert leftovers["alive"].poll() is None  # a live harness's processes are never taken
    if leftovers["theirs"].poll() is None:
        assert pids["theirs"] in left or "theirs" in before
    # `sealcheck cleanup --runs OTHER` is what removes it
    assert cli.main(["cleanup", "--runs", str(tmp_path / "other")]) == 0
    assert _ended(leftovers["theirs"]) == -9
    assert leftovers["alive"].poll() is None


def test_a_run_s_start_cleans_only_its_archive_naming_the_run(
    tmp_path: Path, leftovers: dict[str, subprocess.Popen[bytes]]
) -> None:
    cfg = load_config(
        None,
        {
            "name": "scoped",
            "seed": 1,
            "spark": "local",
            "duration_s": 6.0,
            "nemeses": [],
            "runs_dir": str(tmp_path / "runs"),
        },
    )
    test = build_test(cfg, sut=_System())  # type: ignore[arg-type]
    out = io.StringIO()
    before = {n for n, p in leftovers.items() if p.poll() is not None}
    with Display(live=False, console=Console(file=out, width=1000, highlight=False)) as display:
        run_test(test, display)
    lines = out.getvalue().splitlines()
    cleaned = [line for line in lines if "cleaned up " in line]
    alone = [line for line in lines if "left alone: " in line]
    if not {"mine", "relative"} & before:
        assert len(cleaned) == 1, lines
        assert (
            f"2 processes of {tmp_path / 'runs' / MINE}, left when its harness died" in (cleaned[0])
        )
    assert not any("other" in line for line in cleaned)
    assert _ended(leftovers["mine"]) == -9 and _ended(leftovers["relative"]) == -9
    assert leftovers["alive"].poll() is None
    if leftovers["theirs"].poll() is None:  # else an older harness elsewhere took it
        assert len(alone) == 1, lines
        other = tmp_path / "other"
        assert (
            f"1 process of {other / THEIRS} (another archive; `sealcheck cleanup --runs "
            f"{other}` removes it)"
        ) in alone[0]
