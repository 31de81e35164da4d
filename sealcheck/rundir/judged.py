"""How ``results.json`` says what was judged, for every reader of it (the CLI, the report,
``serve``, the pytest plugin, the shrinker): the word of a checker that had nothing to judge,
the order in which anomalies are read (the first wrong step first), and the one rule that
composes a run's verdict from its checkers — used by the checkers when they write the file
(:class:`sealcheck.checkers.result.RunResult`) and by every reader that shows what a file
proves (:func:`proven`), so a top-level ``valid`` edited after the run is never believed.

Imports nothing of Sealcheck (the pytest plugin reads results through it without loading the
checkers).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sealcheck.rundir.regular import not_regular

#: a checker's ``valid`` in ``results.json`` when the system under test offers nothing for it
#: to judge (e.g. ``as_of`` without snapshots): neither a pass nor a failure, and left out of
#: the run's verdict
NOT_APPLICABLE = "not applicable"
#: the ``<meta name=…>`` in which ``report.html`` records the verdict it shows (``VALID``,
#: ``INVALID`` or ``UNKNOWN``), so a reader can tell a report from a ``results.json`` that no
#: longer matches it
REPORT_VERDICT_META = "sealcheck-verdict"
#: a verdict -> the word people read (and the report records)
VERDICT_WORDS = {True: "VALID", False: "INVALID", None: "UNKNOWN"}
_META = re.compile(rf'<meta name="{REPORT_VERDICT_META}" content="(VALID|INVALID|UNKNOWN)">')
#: how far into ``report.html`` its verdict is looked for (it is in the ``<head>``)
_HEAD_BYTES = 8192


def is_not_applicable(checker: Any) -> bool:
    """Whether a checker's entry of ``results.json`` says it had nothing to judge."""
    return isinstance(checker, dict) and checker.get("valid") == NOT_APPLICABLE


def step_order(step: Any, checker: str) -> tuple[int, int, str]:
    """Sort key of an anomaly: by step, then checker; anomalies without a step come last."""
    if isinstance(step, int) and not isinstance(step, bool):
        return (0, step, checker)
    return (1, 0, checker)


def compose(values: Iterable[bool | None]) -> bool | None:
    """False beats unknown beats true (nothing at all is true), like Jepsen's."""
    seen = list(values)
    if any(v is False for v in seen):
        return False
    if any(v is None for v in seen):
        return None
    return True


def run_verdict(judged: Iterable[bool | None], doubted: bool) -> bool | None:
    """A run's verdict from its *applicable* checkers' verdicts: their composition; unknown
    when none applied, and never valid while ``doubted`` (an input problem, or a registered
    checker that did not run: a passing subset proves only part)."""
    seen = list(judged)
    if not seen:
        return None
    verdict = compose(seen)
    return None if verdict is True and doubted else verdict


def decode(value: Any) -> tuple[bool, bool | None]:
    """``(known, verdict)`` of a verdict as ``results.json`` spells it: ``true``, ``false``,
    ``"unknown"``; anything else is not known (and unknown)."""
    if isinstance(value, bool):
        return True, value
    return value == "unknown", None


def _json_word(value: Any) -> str:
    """A top-level ``valid`` as it reads in the file: ``true``, ``false``, ``"unknown"``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return f'"{value}"' if isinstance(value, str) else repr(value)


@dataclass(frozen=True)
class Proven:
    """What a ``results.json`` document proves (:func:`proven`): the verdict its checkers
    compose to, the top-level ``valid`` as written, and the verdict its report records."""

    #: the verdict composed from its checkers (what the file proves)
    checkers: bool | None
    #: its top-level ``valid`` as written (``True``, ``False``, ``"unknown"`` or anything)
    written: Any
    #: the verdict ``report.html`` records (None: no report, or one written before reports
    #: recorded it)
    report: str | None = None

    @property
    def flag_agrees(self) -> bool:
        """Whether the top-level ``valid`` is the verdict its checkers compose to."""
        known, verdict = decode(self.written)
        return known and verdict is self.checkers

    @property
    def report_agrees(self) -> bool:
        """Whether the report (when it records its verdict) shows what the file proves."""
        return self.report is None or self.report == VERDICT_WORDS[self.checkers]

    @property
    def valid(self) -> bool | None:
        """The verdict to show: what the checkers prove, unknown when anything disagrees."""
        return self.checkers if self.flag_agrees and self.report_agrees else None

    def disagreement(self, run_dir: str) -> str | None:
        """Why the run's files do not agree with each other, naming how to re-judge
        ``run_dir``; None when they agree."""
        again = f"re-judge it with `sealcheck check {run_dir}`"
        mine = VERDICT_WORDS[self.checkers].lower()
        if not self.flag_agrees:
            return (
                f"results.json does not match its checkers (top-level valid: "
                f"{_json_word(self.written)}, its checkers: {mine}): the file was changed "
                f"after the run; {again}"
            )
        if not self.report_agrees:
            return (
                f"results.json does not match report.html (results.json: {mine}, report.html: "
                f"{self.report}): one was changed after the run (or `sealcheck check` is "
                f"rewriting them now); {again}"
            )
        return None


def checkers_verdict(doc: Mapping[str, Any]) -> bool | None:
    """The verdict a ``results.json`` document's checkers compose to, by :func:`run_verdict`:
    a checker that had nothing to judge is left out, one of an unexpected shape is unknown,
    and an input problem (or incomplete inputs) or a checker in ``not_run`` keeps it from
    valid."""
    checkers = doc.get("checkers")
    judged = [
        decode(c.get("valid") if isinstance(c, dict) else None)[1]
        for c in (checkers.values() if isinstance(checkers, dict) else ())
        if not is_not_applicable(c)
    ]
    inputs = doc.get("inputs")
    inputs = inputs if isinstance(inputs, dict) else {}
    problems, not_run = inputs.get("problems"), doc.get("not_run")
    doubted = bool(problems) or inputs.get("complete") is False or bool(not_run)
    return run_verdict(judged, doubted)


def proven(doc: Mapping[str, Any], report: str | None = None) -> Proven:
    """What the ``results.json`` document ``doc`` proves, beside the verdict its report
    records (``report``, :func:`report_verdict`)."""
    return Proven(checkers_verdict(doc), doc.get("valid"), report)


def report_verdict(path: Path) -> str | None:
    """The verdict ``report.html`` at ``path`` records (:data:`REPORT_VERDICT_META`); None when
    there is no report or it records none (written before reports did)."""
    if not_regular(path, path.parent) is not None:  # a FIFO would hang every reader
        return None
    try:
        with path.open("rb") as fh:
            head = fh.read(_HEAD_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return None
    found = _META.search(head)
    return found[1] if found else None


def report_meta(word: str) -> str:
    """The ``<meta>`` tag a report writes to record its verdict ``word``."""
    return f'<meta name="{REPORT_VERDICT_META}" content="{word}">'
