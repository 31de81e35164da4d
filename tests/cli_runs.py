"""Running `sealcheck run` as a user does (a subprocess) and reading what it stored."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from rundir.history import History

ROOT = Path(__file__).resolve().parents[1]


def sealcheck_run(store: Path, *flags: str, timeout_s: float = 600) -> tuple[int, str, Path]:
    """Exit code, output and run directory of one `sealcheck run` into ``store``."""
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "run", "--store", str(store), "--no-progress", *flags],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        cwd=ROOT,
    )
    out = proc.stdout + proc.stderr
    run_dir = (store / "latest").resolve()
    return proc.returncode, out, run_dir


def ops(run_dir: Path) -> list[dict[str, Any]]:
    """The run's history."""
    return History.load(run_dir / "history.jsonl").ops
