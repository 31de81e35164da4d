"""The store of runs: ``store/<test-name>/<timestamp>/`` per run, ``store/latest`` pointing at
the newest one.

A run directory holds ``test.json`` (config, seed, schedule, versions, the command that
repeats it), ``history.jsonl``, ``results.json``, ``report.html``, ``logs/`` (Kafka and each
pipeline incarnation), ``topic.parquet`` (the topic dump) and ``persist/store.db`` (a copy of
the persist store), so ``sealcheck check <dir>`` re-judges it offline.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def new_run_dir(store: Path, name: str) -> Path:
    """Create ``store/<name>/<timestamp>/`` (unique even within one second)."""
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    base = store / name
    base.mkdir(parents=True, exist_ok=True)
    for n in range(1000):
        run = base / (stamp if n == 0 else f"{stamp}-{n}")
        try:
            run.mkdir()
        except FileExistsError:
            continue
        (run / "logs").mkdir()
        return run
    raise RuntimeError(f"could not create a run directory under {base}")


def point_latest(store: Path, run_dir: Path) -> None:
    """Make ``store/latest`` a relative symlink to ``run_dir`` (atomically replaced)."""
    link = store / "latest"
    tmp = store / f".latest-{os.getpid()}"
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    tmp.symlink_to(run_dir.relative_to(store))
    tmp.replace(link)


def write_json(path: Path, doc: Any) -> None:
    """Write JSON atomically (a reader never sees half a file)."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(doc, indent=1, sort_keys=True, default=str) + "\n")
    tmp.replace(path)


@dataclass(frozen=True)
class RunSummary:
    """One stored run, for listings."""

    path: Path
    name: str
    started: str
    valid: Any  # True / False / "unknown" / None (no results: the run died)
    seed: int | None
    duration_s: float | None


def list_runs(store: Path) -> list[RunSummary]:
    """Every run under ``store``, newest first."""
    runs: list[RunSummary] = []
    if not store.exists():
        return runs
    for test in sorted(p for p in store.iterdir() if p.is_dir() and not p.is_symlink()):
        for run in sorted(p for p in test.iterdir() if p.is_dir()):
            valid, seed, took = None, None, None
            with contextlib.suppress(OSError, ValueError):
                valid = json.loads((run / "results.json").read_text()).get("valid")
            with contextlib.suppress(OSError, ValueError):
                meta = json.loads((run / "test.json").read_text())
                seed = meta.get("config", {}).get("seed")
                took = meta.get("took_s")
            runs.append(RunSummary(run, test.name, run.name, valid, seed, took))
    return sorted(runs, key=lambda r: r.started, reverse=True)
