"""``sealcheck serve``: browse an archive of runs. The index lists the suites (each night's
counts and every case's verdict across the nights, :mod:`sealcheck.report.suite_trend`) and the runs
(verdict, nemeses, failing checkers, links to each run's report and files); the files
themselves are served as they are, logs and JSON as text a browser shows rather than
downloads. Listens on 127.0.0.1 only, and serves nothing outside the archive (not even
through a symlink); what it cannot serve it does not list either.

A run's verdict is what its ``results.json`` proves — its checkers composed
(:func:`sealcheck.rundir.judged.proven`), never its top-level ``valid`` alone. A run whose
``results.json`` does not match its checkers or its report is shown UNKNOWN and marked, in the
index, on its files page and above its report, saying how to re-judge it.
"""

from __future__ import annotations

import http.server
import io
import json
import os
import re
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
from sealcheck.rundir.judged import VERDICT_WORDS, is_not_applicable, proven, report_verdict
from sealcheck.rundir.regular import not_regular

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
    #: why its results.json does not match its checkers or its report (it is then UNKNOWN)
    mismatch: str | None = None


def _word(valid: Any) -> str:
    """results.json's ``valid`` as a verdict (anything unexpected is UNKNOWN)."""
    return VERDICT_WORDS[valid] if isinstance(valid, bool) else "UNKNOWN"


def _read_json(path: Path) -> tuple[dict[str, Any], str | None]:
    """A JSON object from ``path`` (a regular file of its run: a FIFO would hang the page), or
    ``{}`` and why not."""
    if not_regular(path, path.parent) is not None:
        return {}, f"unreadable {path.name} (not a regular file of the run)"
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


def inside(archive: Path, path: Path) -> bool:
    """Whether ``path`` (every symlink on the way followed) lies in the resolved ``archive``:
    what :func:`make_server` serves, and so what the index may list."""
    try:
        return path.resolve().is_relative_to(archive)
    except (OSError, RuntimeError, ValueError):  # a loop of symlinks, a NUL in the name
        return False


def read_run(runs: Path, run: Path) -> RunRow:
    """The row of the run stored in ``run`` (never raises for a missing or broken file): its
    verdict is what its results.json proves, UNKNOWN when that does not match the file's
    top-level ``valid`` or its report."""
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
    report = run / "report.html"
    shown = proven(results, report_verdict(report))
    mismatch = None
    if results_err is not None or "valid" not in results:
        state = "NO_RESULT"
    elif results.get(REJUDGING) or results.get("partial"):  # not a complete judgement
        state = "UNKNOWN"
    else:
        mismatch = shown.disagreement(str(run))
        state = VERDICT_WORDS[shown.valid]
    reason = (mismatch or verdict_reason(results)) if state == "UNKNOWN" else None
    return RunRow(
        href=urllib.parse.quote(run.relative_to(runs).as_posix()),
        name=run.parent.name,
        started=run.name,
        state=state,
        seed=config.get("seed"),
        took_s=meta.get("took_s"),
        has_report=report.is_file() and inside(runs.resolve(), report),
        nemeses=_counted(nemeses) if isinstance(nemeses, list) else [],
        failing=failing,
        problems=[e for e in (meta_err, results_err) if e is not None],
        reason=reason or ("results.json gives no reason" if state == "UNKNOWN" else None),
        mismatch=mismatch,
    )


def list_run_rows(runs: Path) -> list[RunRow]:
    """Every run in the archive ``runs`` (``<test>/<time>/``; not ``suites/``) that can be
    served — a run directory that is a symlink leading out of the archive is not one — newest
    first."""
    if not runs.is_dir():
        return []
    root = runs.resolve()
    tests = (p for p in runs.iterdir() if p.is_dir() and not p.is_symlink() and p.name != "suites")
    found = [
        run
        for test in sorted(tests)
        for run in sorted(test.iterdir())
        if run.is_dir() and inside(root, run)
    ]
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


@dataclass(frozen=True)
class Entry:
    """One file or directory of a listing: its name as shown and its quoted link."""

    name: str
    href: str


def run_of(archive: Path, path: Path) -> Path | None:
    """The run directory (``<archive>/<test>/<time>``) a resolved ``path`` in ``archive`` is,
    or whose ``report.html`` it is; None for anything else."""
    rel = path.relative_to(archive).parts
    if rel[:1] == ("suites",) or len(rel) not in (2, 3) or rel[2:] not in ((), ("report.html",)):
        return None
    return archive / rel[0] / rel[1]


def listing(archive: Path, folder: Path) -> list[Entry]:
    """What ``folder`` holds that can be served (nothing that leads out of ``archive``), by
    name; directories end in ``/``."""
    entries = []
    for name in sorted(os.listdir(folder), key=str.lower):
        path = folder / name
        if inside(archive, path):
            tail = "/" if path.is_dir() else ""
            entries.append(Entry(name + tail, urllib.parse.quote(name) + tail))
    return entries


_BODY = re.compile(rb"<body[^>]*>", re.IGNORECASE)


class _Handler(http.server.SimpleHTTPRequestHandler):
    archive: Path

    def _page(self, page: bytes) -> io.BytesIO:
        """Send the headers of the HTML ``page``; the page to copy out."""
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(page)))
        self.end_headers()
        return io.BytesIO(page)

    def send_head(self) -> io.BytesIO | BinaryIO | None:
        """The index for ``/``; else a file or directory listing inside the archive, or 404;
        a run's report under a warning when its results.json does not match it."""
        if urllib.parse.urlsplit(self.path).path in ("/", "/index.html"):
            try:
                page = index_html(self.archive).encode()
            except Exception as exc:  # a page saying why, not a dropped connection
                self.send_error(HTTPStatus.INTERNAL_SERVER_ERROR, f"{type(exc).__name__}: {exc}")
                raise
            return self._page(page)
        # translate_path drops `..`; `inside` also refuses a symlink that leads out of the
        # archive, and a path no file can have (a NUL in it)
        path = Path(self.translate_path(self.path))
        if not inside(self.archive, path):
            self.send_error(HTTPStatus.NOT_FOUND, "File not found")
            return None
        run = run_of(self.archive, path.resolve())
        if run is not None and path.name == "report.html" and path.is_file():
            row = read_run(self.archive, run)
            if row.mismatch is not None:
                report = path.read_bytes()
                banner = render("serve_banner.html.j2", run=row, color=STATE_COLORS[row.state])
                end = m.end() if (m := _BODY.search(report)) else 0
                return self._page(report[:end] + banner.encode() + report[end:])
        return super().send_head()

    def list_directory(self, path: str | os.PathLike[str]) -> io.BytesIO | None:
        """A directory's files and directories that can be served (nothing that leads out of
        the archive); a run's directory with its verdict above them."""
        folder = Path(path)
        try:
            entries = listing(self.archive, folder)
        except OSError:
            self.send_error(HTTPStatus.NOT_FOUND, "No permission to list directory")
            return None
        run = run_of(self.archive, folder.resolve())
        page = render(
            "serve_dir.html.j2",
            where=folder.resolve().relative_to(self.archive).as_posix(),
            entries=entries,
            run=None if run is None else read_run(self.archive, run),
            colors=STATE_COLORS,
        )
        return self._page(page.encode())

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
