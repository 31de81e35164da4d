"""``sealcheck serve``: browse an archive of runs. The index lists the suites (each night's
counts and every case's verdict across the nights, :mod:`sealcheck.report.suite_trend`) and the runs
(verdict, nemeses, failing checkers, links to each run's report and files); the files
themselves are served as they are, logs and JSON as text a browser shows rather than
downloads. Listens on 127.0.0.1 only, and serves nothing outside the archive (not even
through a symlink)."""

from __future__ import annotations

import http.server
import io
import json
import os
import urllib.parse
from collections import Counter
from dataclasses import dataclass, field
from functools import partial
from http import HTTPStatus
from pathlib import Path
from typing import Any, BinaryIO

from sealcheck.report.report import COLORS
from sealcheck.report.suite_trend import MAX_NIGHTS, list_suites
from sealcheck.report.templating import render
from sealcheck.rundir.archive import REJUDGING, verdict_reason
from sealcheck.rundir.judged import is_not_applicable

TEXT = "text/plain; charset=utf-8"
#: suffix -> Content-Type, for the files a browser should show rather than download
TYPES = {
    ".log": TEXT,
    ".jsonl": TEXT,
    ".txt": TEXT,
    ".toml": TEXT,
    ".xml": TEXT,
    ".json": "application/json; charset=utf-8",
}
#: verdict (or state of a case in a night) -> its colour on the index
STATE_COLORS = {
    "VALID": COLORS[True],
    "INVALID": COLORS[False],
    "UNKNOWN": COLORS["unknown"],
    "NO_RESULT": COLORS[None],
    "SKIPPED": "#afb8c1",
    "NONE": "#eaeef2",
}
_VERDICT = {True: "VALID", False: "INVALID", "unknown": "UNKNOWN"}


@dataclass(frozen=True)
class RunRow:
    """One stored run (``<runs>/<test>/<time>/``), as the index lists it."""

    href: str  # the run directory relative to the archive, quoted
    name: str
    started: str
    state: str  # VALID / INVALID / UNKNOWN / NO_RESULT (no readable results.json)
    seed: Any
    took_s: Any
    has_report: bool
    nemeses: list[str] = field(default_factory=list)
    failing: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # files missing or unreadable
    #: why an UNKNOWN run is unknown (:func:`sealcheck.rundir.archive.verdict_reason`): the first
    # input
    #: problem — "being re-judged since …" for a check under way or dead — else the first
    #: checker that could not judge, with its error
    reason: str | None = None


def _word(valid: Any) -> str:
    """results.json's ``valid`` as a verdict (anything unexpected is UNKNOWN)."""
    return _VERDICT.get(valid, "UNKNOWN") if isinstance(valid, bool | str) else "UNKNOWN"


def _read_json(path: Path) -> tuple[dict[str, Any], str | None]:
    """A JSON object from ``path``, or ``{}`` and why not."""
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        return {}, f"no {path.name}"
    except (OSError, ValueError) as exc:
        return {}, f"unreadable {path.name} ({type(exc).__name__})"
    if not isinstance(doc, dict):
        return {}, f"unreadable {path.name} (not an object)"
    return doc, None


def _counted(names: list[Any]) -> list[str]:
    """``[a, b, a]`` -> ``["a x2", "b"]``, in order of first appearance."""
    return [f"{n} x{k}" if k > 1 else str(n) for n, k in Counter(map(str, names)).items()]


def read_run(runs: Path, run: Path) -> RunRow:
    """The row of the run stored in ``run`` (never raises for a missing or broken file)."""
    meta, meta_err = _read_json(run / "test.json")
    results, results_err = _read_json(run / "results.json")
    config = meta.get("config")
    config = config if isinstance(config, dict) else {}
    nemeses = config.get("nemeses")
    checkers = results.get("checkers")
    failing = []
    for name, c in (checkers if isinstance(checkers, dict) else {}).items():
        valid = c.get("valid") if isinstance(c, dict) else None
        if valid is not True and not is_not_applicable(c):  # nothing to judge is no failure
            failing.append(name if valid is False else f"{name} ({_word(valid)})")
    if results_err is not None or "valid" not in results:
        state = "NO_RESULT"
    elif results.get(REJUDGING) or results.get("partial"):  # not a complete judgement
        state = "UNKNOWN"
    else:
        state = _word(results["valid"])
    reason = verdict_reason(results) if state == "UNKNOWN" else None
    return RunRow(
        href=urllib.parse.quote(run.relative_to(runs).as_posix()),
        name=run.parent.name,
        started=run.name,
        state=state,
        seed=config.get("seed"),
        took_s=meta.get("took_s"),
        has_report=(run / "report.html").is_file(),
        nemeses=_counted(nemeses) if isinstance(nemeses, list) else [],
        failing=failing,
        problems=[e for e in (meta_err, results_err) if e is not None],
        reason=reason or ("results.json gives no reason" if state == "UNKNOWN" else None),
    )


def list_run_rows(runs: Path) -> list[RunRow]:
    """Every run in the archive ``runs`` (``<test>/<time>/``; not ``suites/``), newest
    first."""
    if not runs.is_dir():
        return []
    tests = (p for p in runs.iterdir() if p.is_dir() and not p.is_symlink() and p.name != "suites")
    found = [run for test in sorted(tests) for run in sorted(test.iterdir()) if run.is_dir()]
    rows = [read_run(runs, run) for run in found]
    return sorted(rows, key=lambda r: r.started, reverse=True)


def index_html(runs: Path) -> str:
    """The index page of the archive ``runs``: its suites, then its runs, newest first."""
    return render(
        "serve_index.html.j2",
        archive=str(runs),
        suites=list_suites(runs),
        runs=list_run_rows(runs),
        colors=STATE_COLORS,
        max_nights=MAX_NIGHTS,
    )


class _Handler(http.server.SimpleHTTPRequestHandler):
    archive: Path

    def send_head(self) -> io.BytesIO | BinaryIO | None:
        """The index for ``/``; else a file or directory listing inside the archive, or 404."""
        if urllib.parse.urlsplit(self.path).path in ("/", "/index.html"):
            try:
                page = index_html(self.archive).encode()
            except Exception as exc:  # a page saying why, not a dropped connection
                self.send_error(HTTPStatus.INTERNAL_SERVER_ERROR, f"{type(exc).__name__}: {exc}")
                raise
            self.send_response(HTTPStatus.OK)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            return io.BytesIO(page)
        # translate_path drops `..`; this also refuses a symlink that leads out of the archive
        if not Path(self.translate_path(self.path)).resolve().is_relative_to(self.archive):
            self.send_error(HTTPStatus.NOT_FOUND, "File not found")
            return None
        return super().send_head()

    def guess_type(self, path: str | os.PathLike[str]) -> str:
        """Text for logs, JSON and the like (a browser shows them); else the usual guess."""
        return TYPES.get(Path(path).suffix.lower()) or super().guess_type(path)

    def end_headers(self) -> None:
        """Headers, and no guessing an HTML page in a log that is served as text."""
        self.send_header("X-Content-Type-Options", "nosniff")
        super().end_headers()


def make_server(runs: Path, port: int) -> http.server.ThreadingHTTPServer:
    """A server for the archive of runs ``runs`` on 127.0.0.1:``port`` (0 picks a free
    port)."""
    runs = runs.resolve()
    handler = type("Handler", (_Handler,), {"archive": runs})
    return http.server.ThreadingHTTPServer(
        ("127.0.0.1", port), partial(handler, directory=str(runs))
    )
