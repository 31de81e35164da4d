"""The suites of an archive of runs, for ``sealcheck serve``: each suite's nights
(``<runs>/suites/<suite>/<time>/summary.json``, written by ``sealcheck suite``) with their
counts, and every case's verdict across the nights, so that a case that started failing last
night stands out. A night whose summary cannot be read is listed as such, never an error."""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

from sealcheck.rundir.archive import verdict_reason

#: the nights a trend shows (and the nights table lists), newest ones
MAX_NIGHTS = 30
#: a case's verdict in one night, worst of its repeats; SKIPPED and NONE (not run) are not
#: verdicts and neither break nor extend a streak
VERDICTS = ("VALID", "INVALID", "UNKNOWN")
_RANK = {"NONE": 0, "SKIPPED": 1, "VALID": 2, "UNKNOWN": 3, "INVALID": 4}
_WORD = {"VALID": "valid", "INVALID": "INVALID", "UNKNOWN": "UNKNOWN"}


@dataclass(frozen=True)
class Night:
    """One run of a suite: ``suites/<suite>/<stamp>/``."""

    stamp: str
    link: str | None  # the night's index.html, relative to the archive and quoted
    counts: dict[str, int]  # VALID / INVALID / UNKNOWN / SKIPPED -> runs
    took_s: float  # the sum of its cases' durations
    cases: int  # the cases the suite has (runs may be fewer while it runs)
    done: bool
    error: str | None  # why its summary.json could not be read
    verdicts: dict[str, str]  # case id -> its worst verdict that night
    #: case id -> why it was UNKNOWN that night (a run being re-judged, an input problem)
    reasons: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Cell:
    """One case in one night of a trend."""

    state: str  # VALID / INVALID / UNKNOWN / SKIPPED / NONE (not run)
    title: str
    link: str | None


@dataclass(frozen=True)
class CaseTrend:
    """One case across the nights of a trend (oldest first)."""

    case: str
    cells: list[Cell]
    summary: str
    current: str | None  # its latest verdict, None if it never ran
    changed: bool  # its latest verdict differs from the one before, since the newest night


@dataclass(frozen=True)
class Suite:
    """One suite: its nights (newest first) and its cases' trend over them."""

    name: str
    nights: list[Night]  # the newest MAX_NIGHTS, newest first
    stored: int  # how many nights are stored
    trend: list[CaseTrend]


def list_suites(runs: Path) -> list[Suite]:
    """Every suite in the archive ``runs`` (``runs/suites/``), by name."""
    root = runs / "suites"
    if not root.is_dir():
        return []
    suites = []
    for d in sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink()):
        stamps = sorted(p.name for p in d.iterdir() if p.is_dir() and not p.is_symlink())
        nights = [read_night(d / s, f"suites/{d.name}/{s}") for s in stamps[-MAX_NIGHTS:]]
        suites.append(Suite(d.name, nights[::-1], len(stamps), trend(nights)))
    return suites


def read_night(path: Path, rel: str) -> Night:
    """The night stored in ``path`` (``rel`` from the archive)."""
    link = urllib.parse.quote(f"{rel}/index.html") if (path / "index.html").is_file() else None
    try:
        doc = json.loads((path / "summary.json").read_text())
        runs: list[dict[str, Any]] = list(doc["runs"])
        counts = dict.fromkeys((*VERDICTS, "SKIPPED"), 0)
        verdicts: dict[str, str] = {}
        reasons: dict[str, str] = {}
        for r in runs:
            v = r["verdict"] if r["verdict"] in counts else "UNKNOWN"
            counts[v] += 1
            case = str(r["case"])
            if _RANK[v] > _RANK[verdicts.get(case, "NONE")]:
                verdicts[case] = v
            if v == "UNKNOWN" and case not in reasons:
                reasons[case] = unknown_reason(r)
        took = float(sum(float(r.get("took_s") or 0) for r in runs))
        cases, done = int(doc["cases"]), bool(doc["done"])
        return Night(path.name, link, counts, took, cases, done, None, verdicts, reasons)
    except FileNotFoundError:
        error = "no summary.json"
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
        error = f"unreadable summary.json ({type(exc).__name__}: {exc})"
    return Night(path.name, link, {}, 0.0, 0, False, error, {})


def unknown_reason(run: dict[str, Any]) -> str:
    """Why a run of a summary was UNKNOWN: its ``reason`` (written since suites record it),
    else what its ``results.json`` says (:func:`sealcheck.rundir.archive.verdict_reason`), else that
    none was recorded."""
    if run.get("reason"):
        return str(run["reason"])
    report = run.get("report")
    if isinstance(report, str) and report:
        try:
            found = verdict_reason(json.loads((Path(report).parent / "results.json").read_text()))
        except (OSError, ValueError):
            found = None
        if found:
            return found
    return "no reason recorded"


def trend(nights: Sequence[Night]) -> list[CaseTrend]:
    """Each case's verdict in each of ``nights`` (oldest first), cases in the order the newest
    summary lists them, then any the newer nights no longer run."""
    order: dict[str, None] = {}
    for n in reversed(nights):
        order.update(dict.fromkeys(n.verdicts))
    out = []
    for case in order:
        cells = [_cell(n, case) for n in nights]
        history = [(n.stamp, n.verdicts.get(case, "NONE")) for n in nights]
        current, changed, line = case_summary(case, history)
        out.append(CaseTrend(case, cells, line, current, changed))
    return out


def _cell(night: Night, case: str) -> Cell:
    state = night.verdicts.get(case, "NONE")
    why = {"NONE": night.error or "not run", "SKIPPED": "skipped (past the time budget)"}
    if state == "UNKNOWN":
        why[state] = f"UNKNOWN: {night.reasons.get(case, 'no reason recorded')}"
    return Cell(state, f"{night.stamp}: {why.get(state, state)}", night.link)


def case_summary(case: str, history: Sequence[tuple[str, str]]) -> tuple[str | None, bool, str]:
    """From ``history`` (night stamp, state; oldest first): the case's latest verdict, whether
    it changed in the newest night, and one line — e.g. ``case X: valid for 5 nights, INVALID
    since 20261124T060626``, with how often it changed if more than once."""
    ran = [(stamp, s) for stamp, s in history if s in VERDICTS]
    if not ran:
        skipped = any(s == "SKIPPED" for _, s in history)
        return None, False, f"case {case}: {'skipped' if skipped else 'not run'} in every night"
    current = ran[-1][1]
    start = len(ran)
    while start > 0 and ran[start - 1][1] == current:
        start -= 1
    streak, before = ran[start:], ran[:start]
    if not before:
        return current, False, f"case {case}: {_WORD[current]} for {_nights(len(streak))}"
    prev = before[-1][1]
    start = len(before)
    while start > 0 and before[start - 1][1] == prev:
        start -= 1
    more = f" ({_nights(len(streak))})" if len(streak) > 1 else ""
    line = (
        f"case {case}: {_WORD[prev]} for {_nights(len(before) - start)}, "
        f"{_WORD[current]} since {streak[0][0]}{more}"
    )
    flips = sum(a[1] != b[1] for a, b in pairwise(ran))
    if flips > 1:  # flaky: more happened than the two streaks tell
        line += f"; {flips} changes in {_nights(len(ran))}"
    return current, streak[0][0] == history[-1][0], line


def _nights(n: int) -> str:
    return f"{n} night" if n == 1 else f"{n} nights"
