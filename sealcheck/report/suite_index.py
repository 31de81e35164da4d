"""The HTML index of a suite (``index.html`` beside its ``summary.json``): the worst verdict,
each run with its verdict, failing checkers, seed, duration and a link to its report, and the
reproduction rate of repeated cases. Rendered from a Jinja template with autoescaping: every
value from a run (a checker's message, a path) is text, never markup."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from sealcheck.report.templating import render

_WORST = {0: "VALID", 1: "INVALID", 2: "UNKNOWN"}


def render_suite_index(summary: dict[str, Any], out: Path) -> str:
    """The index page of the suite whose ``summary.json`` document is ``summary``, stored in
    ``out`` (report links are relative to it, so the directory can be moved or served)."""
    runs = []
    for r in summary["runs"]:
        link = None
        if r.get("report") and Path(r["report"]).exists():
            link = os.path.relpath(r["report"], out)
        runs.append({**r, "link": link})
    return render(
        "suite_index.html.j2",
        suite=summary["suite"],
        cases=summary["cases"],
        done=summary["done"],
        runs=runs,
        rates=summary["rates"],
        repeated=any(n["runs"] > 1 for n in summary["rates"].values()),
        exit_code=summary["exit_code"],
        worst=_WORST.get(summary["exit_code"], "UNKNOWN"),
    )
