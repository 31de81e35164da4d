"""Running `sealcheck run` as a user does (a subprocess) and reading what it stored."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from sealcheck.rundir.history import History

ROOT = Path(__file__).resolve().parents[1]


def sealcheck_run(runs: Path, *flags: str, timeout_s: float = 600) -> tuple[int, str, Path]:
    """Exit code, output and run directory of one `sealcheck run` into the archive ``runs``."""
    proc = subprocess.run(
        [sys.executable, "-m", "sealcheck", "run", "--runs", str(runs), "--no-progress", *flags],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        cwd=ROOT,
    )
    out = proc.stdout + proc.stderr
    run_dir = (runs / "latest").resolve()
    return proc.returncode, out, run_dir


def sealcheck_with_module(
    where: Path, module: str, source: str, *argv: str, timeout_s: float = 600
) -> subprocess.CompletedProcess[str]:
    """``sealcheck ARGV`` run in ``where`` with a module of a user's own there (``module``, its
    ``source`` dedented) on the import path, as a descriptor in a user's test folder is:
    stdout and stderr apart."""
    (where / f"{module}.py").write_text(textwrap.dedent(source))
    path = [str(where), str(ROOT), *os.environ.get("PYTHONPATH", "").split(os.pathsep)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in path if p)}
    return subprocess.run(
        [sys.executable, "-m", "sealcheck", *argv],
        capture_output=True,
        text=True,
        env=env,
        cwd=where,
        timeout=timeout_s,
    )


def ops(run_dir: Path) -> list[dict[str, Any]]:
    """The run's history."""
    return History.load(run_dir / "history.jsonl").ops


def replay(
    tmp_path: Path, config: dict[str, Any], schedule: list[dict[str, Any]], timeout_s: float = 600
) -> tuple[int, str, Path]:
    """`sealcheck run --replay` of a hand-written ``schedule`` under ``config`` (a
    ``TestConfig.to_json()``), so every fault happens once at a known time."""
    plan = tmp_path / "plan"
    plan.mkdir()
    (plan / "test.json").write_text(json.dumps({"config": config, "schedule": schedule}))
    return sealcheck_run(tmp_path / "runs", "--replay", str(plan), timeout_s=timeout_s)


def outcomes(history: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The nemesis actions' final values (with ``outcome``) by action name."""
    return {
        o["f"]: o["value"]
        for o in history
        if o["process"] == "nemesis" and o["type"] == "info" and "outcome" in o["value"]
    }


def labelled() -> list[str]:
    """Names of every container and network carrying a run's label (none after a run)."""
    import docker

    from sealcheck.infra.containers.kafka import RUN_LABEL

    client = docker.from_env()
    try:
        boxes = [c.name for c in client.containers.list(all=True, filters={"label": RUN_LABEL})]
        return boxes + [n.name for n in client.networks.list(filters={"label": RUN_LABEL})]
    finally:
        client.close()


def sealed_after(history: list[dict[str, Any]], actions: tuple[str, ...]) -> list[str]:
    """The actions after whose invocation the ``data`` upper never moved again (none: every
    fault was followed by a sealed step)."""
    seen = [(o["time"], o["value"].get("data", 0)) for o in history if o["f"] == "uppers"]
    last = max((u for _, u in seen), default=0)
    stuck = []
    for action in actions:
        at = next(o["time"] for o in history if o["f"] == action and o["type"] == "invoke")
        if last <= max((u for t, u in seen if t <= at), default=0):
            stuck.append(action)
    return stuck


def left_of_cluster(run_dir: Path) -> list[str]:
    """Processes of the run still alive, and Spark workers whose command line names the run
    (none after a run)."""
    from sealcheck.infra import cleanup

    left = [str(p) for p in cleanup.leftovers() if p.run == str(run_dir)]
    alive = subprocess.run(["pgrep", "-af", "deploy.worker.Worker"], capture_output=True, text=True)
    return left + [line for line in alive.stdout.splitlines() if str(run_dir) in line]


def runs_once(
    tmp: Any, flags: Sequence[str], cases: Mapping[str, Sequence[str]]
) -> Callable[[str], tuple[int, str, Path]]:
    """Each case of ``cases`` (name -> its own flags, after the shared ``flags``) run once, in a
    folder of its own from ``tmp`` (a ``pytest.TempPathFactory``), when a test first asks."""
    done: dict[str, tuple[int, str, Path]] = {}

    def run(name: str) -> tuple[int, str, Path]:
        if name not in done:
            done[name] = sealcheck_run(tmp.mktemp(name), *flags, *cases[name])
        return done[name]

    return run
