"""The archive of runs: ``runs/<test-name>/<timestamp>/`` per run, ``runs/latest`` pointing at
the newest one (``runs/`` is the default of ``--runs``; older checkouts used ``store/``).

A run directory holds ``test.json`` (config, seed, schedule, versions, the command that
repeats it), ``history.jsonl`` (with the acknowledged writes beside it in ``acks.arrows``),
``results.json``, ``report.html``, ``logs/`` (Kafka and each
incarnation of the system under test: ``sut-N.log``), ``topic.parquet`` (the topic dump) and
``export/`` (the system's state as the checkers read it, with a copy of a SQLite store), so
``sealcheck check <dir>`` re-judges it offline. Runs stored before these names keep
``pipeline-N.log`` and ``persist/``; every reader accepts both (:mod:`sealcheck.rundir.names`).

``results.json`` is the run's verdict and only a complete judgement writes it: while
``sealcheck check`` re-judges a run it holds an UNKNOWN marker (:func:`mark_rejudging`), and a
check of some checkers only writes :data:`PARTIAL` instead. :func:`verdict_reason` says why a
verdict is UNKNOWN, for every listing.
"""

from __future__ import annotations

import contextlib
import html
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sealcheck.rundir.judged import proven, report_meta, report_verdict
from sealcheck.rundir.regular import read_text


def new_run_dir(runs: Path, name: str) -> Path:
    """Create ``runs/<name>/<timestamp>/`` in the archive ``runs`` (unique even within one
    second)."""
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    base = runs / name
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


def point_latest(runs: Path, run_dir: Path) -> None:
    """Make ``runs/latest`` a relative symlink to ``run_dir`` (atomically replaced)."""
    link = runs / "latest"
    tmp = runs / f".latest-{os.getpid()}"
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    tmp.symlink_to(run_dir.relative_to(runs))
    tmp.replace(link)


def write_json(path: Path, doc: Any) -> None:
    """Write JSON atomically (a reader never sees half a file)."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(doc, indent=1, sort_keys=True, default=str) + "\n")
    tmp.replace(path)


#: what ``sealcheck check --checker …`` writes: a check of some checkers, never the verdict
PARTIAL = "partial-check.json"
#: the key of ``results.json`` that marks a run as being re-judged (the check's start, UTC)
REJUDGING = "rejudging"


def verdict_reason(doc: Any) -> str | None:
    """Why a ``results.json`` document is not VALID when no anomaly says so: a partial check
    held where the verdict should be, else its first input problem, else the first checker
    that is unknown with its error; None when it says nothing (or is not a document)."""
    if not isinstance(doc, dict):
        return None
    if doc.get("partial"):
        return "results.json holds a check of some checkers only, not the run's verdict"
    inputs = doc.get("inputs")
    problems = inputs.get("problems") if isinstance(inputs, dict) else None
    if isinstance(problems, list) and problems:
        return str(problems[0])
    not_run = doc.get("not_run")
    if isinstance(not_run, list) and not_run:
        return f"not every checker ran ({', '.join(map(str, not_run))} did not): VALID needs all"
    checkers = doc.get("checkers")
    for name, c in (checkers if isinstance(checkers, dict) else {}).items():
        if isinstance(c, dict) and c.get("valid") in ("unknown", None) and c.get("error"):
            return f"{name}: {c['error']}"
    return None


def mark_rejudging(run_dir: Path) -> str:
    """Replace the run's verdict (``results.json``, atomically) and ``report.html`` with
    an
    UNKNOWN marker saying a check is under way, before it judges: a check that dies leaves
    UNKNOWN with this reason, never an older VALID. Returns the reason."""
    since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    why = (
        f"being re-judged by `sealcheck check` since {since} (UTC); if this stays, the check "
        "died: run it again"
    )
    inputs = {"complete": False, "problems": [why], "notes": []}
    acks = {"read": None, "written": None}
    doc = {"valid": "unknown", REJUDGING: since, "checkers": {}}
    write_json(run_dir / "results.json", {**doc, "inputs": {**inputs, "acknowledged_writes": acks}})
    write_plain_report(run_dir, "UNKNOWN", [why])
    return why


def write_plain_report(run_dir: Path, word: str, lines: list[str]) -> Path:
    """Replace ``report.html`` (atomically) with a page holding only the verdict's word
    and
    ``lines``: while a check runs, or when the full report cannot be rendered."""
    paragraphs = "".join(f'<p class="problem">{html.escape(line)}</p>\n' for line in lines)
    page = (
        f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8">{report_meta(word)}'
        f"<title>{word}"
        f'</title></head>\n<body><h1 id="verdict">{html.escape(word)}</h1>\n{paragraphs}'
        "</body></html>\n"
    )
    path = run_dir / "report.html"
    tmp = run_dir / "report.html.tmp"
    tmp.write_text(page, encoding="utf-8")
    tmp.replace(path)
    return path


@dataclass(frozen=True)
class RunSummary:
    """One stored run, for listings."""

    path: Path
    name: str
    started: str
    #: True / False / "unknown": what its results.json proves
    #: (:func:`sealcheck.rundir.judged.proven`); None: no results (the run died)
    valid: Any
    seed: int | None
    duration_s: float | None
    #: why it is not VALID when no anomaly says so (:func:`verdict_reason`)
    reason: str | None = None


def list_runs(runs_dir: Path) -> list[RunSummary]:
    """Every run in the archive ``runs_dir``, newest first."""
    runs: list[RunSummary] = []
    if not runs_dir.exists():
        return runs
    for test in sorted(p for p in runs_dir.iterdir() if p.is_dir() and not p.is_symlink()):
        for run in sorted(p for p in test.iterdir() if p.is_dir()):
            valid, seed, took, reason = None, None, None, None
            # read only when regular files of the run: a FIFO opened for reading never ends
            with contextlib.suppress(OSError, ValueError, AttributeError):
                results = json.loads(read_text(run / "results.json", run))
                shown = proven(results, report_verdict(run / "report.html"))
                valid = "unknown" if shown.valid is None else shown.valid
                reason = shown.disagreement(str(run)) or verdict_reason(results)
            with contextlib.suppress(OSError, ValueError):
                meta = json.loads(read_text(run / "test.json", run))
                seed = meta.get("config", {}).get("seed")
                took = meta.get("took_s")
            runs.append(RunSummary(run, test.name, run.name, valid, seed, took, reason))
    return sorted(runs, key=lambda r: r.started, reverse=True)
