"""What one stored run concluded, for a caller that ran it as a child (a pytest test, a suite):
:class:`ChaosResult`, read back from the run directory (``results.json``, ``test.json``), so
the caller sees exactly what a person sees in the report."""

from __future__ import annotations

import dataclasses
import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sealcheck.nemeses.schedule import UNPLANNED
from sealcheck.rundir.archive import REJUDGING, verdict_reason
from sealcheck.rundir.facts import bindings_kept, read_facts
from sealcheck.rundir.judged import (
    VERDICT_WORDS,
    is_not_applicable,
    proven,
    report_verdict,
    step_order,
)
from sealcheck.rundir.names import LAST_START, current_context
from sealcheck.rundir.regular import read_text


@dataclass(frozen=True)
class AnomalySummary:
    """One example anomaly of a failing checker, as the report lists it."""

    checker: str
    kind: str
    key: str | None
    step: int | None
    where: str
    #: the checker's explanation of it, for people ("k17 shows the value written at ...")
    detail: str = ""
    #: what :attr:`step` counts: ``step`` (a sealed step: a Delta job's batch id) or
    #: ``state`` (an output without bindings: the harness's state index, ``where`` naming the
    #: batches)
    unit: str = "step"
    #: for a system with versions: the version the system ran when the step was first seen
    #: sealed (or the state read), "" otherwise
    version: str = ""

    def line(self) -> str:
        """``checker: kind at step S (batch …) key K (V running): detail``."""
        parts = [f"{self.checker}: {self.kind}"]
        if self.step is not None:
            where = f" ({self.where})" if self.where else ""
            parts.append(f"at {self.unit} {self.step}{where}")
        if self.key is not None:
            parts.append(f"key {self.key}")
        if self.version:
            parts.append(f"({self.version} running)")
        return " ".join(parts) + (f": {self.detail}" if self.detail else "")


class VerdictError(AssertionError):
    """A chaos run's verdict was not the one a test asked for; the message is the run's
    :meth:`ChaosResult.summary` (so the pytest plugin does not print it a second time)."""

    def __init__(self, message: str, result: ChaosResult) -> None:
        super().__init__(message)
        self.result = result


@dataclass(frozen=True)
class ChaosResult:
    """How one chaos run ended: its verdict (``VALID``, ``INVALID``, ``UNKNOWN``), the checkers
    that failed (not those that had nothing to judge), example anomalies (the first wrong step
    first), why the verdict is unknown if it is, where the report is and the commands that
    repeat the run."""

    verdict: str
    run_dir: Path
    seed: int
    exit_code: int
    failing_checkers: tuple[str, ...] = ()
    anomalies: tuple[AnomalySummary, ...] = ()
    problems: tuple[str, ...] = ()
    reproduce: tuple[str, ...] = ()
    output: str = field(default="", repr=False)
    #: what the run warned of before it started: a nemesis asked for and given no fault
    #: (:func:`sealcheck.nemeses.schedule.unplanned`), "" when none
    unplanned: str = ""

    @property
    def valid(self) -> bool:
        """Deprecated: ``verdict == "VALID"`` (UNKNOWN counts as not valid here, where
        ``Outcome.valid`` is None for it — use :attr:`verdict`, one word for both)."""
        warnings.warn(
            'ChaosResult.valid is deprecated: use result.verdict == "VALID"',
            DeprecationWarning,
            stacklevel=2,
        )
        return self.verdict == "VALID"

    @property
    def reason(self) -> str:
        """Why the verdict is UNKNOWN (its first problem), or "" when it is not."""
        return self.problems[0] if self.verdict == "UNKNOWN" and self.problems else ""

    @property
    def report(self) -> Path:
        """The run's HTML report."""
        return self.run_dir / "report.html"

    def why_lines(self, shown: int) -> list[str]:
        """What failed: the failing checkers and the first ``shown`` anomalies, each with what
        its checker says of it (the first wrong step first, as the report leads)."""
        lines = ["failing checkers: " + ", ".join(self.failing_checkers)]
        lines = lines if self.failing_checkers else []
        lines += [f"  {a.line()}" for a in self.anomalies[:shown]]
        if len(self.anomalies) > shown:
            lines.append(f"  … {len(self.anomalies) - shown} more examples in the report")
        return lines

    def summary(self) -> str:
        """The verdict, what failed, the first anomalies, the report and how to repeat it:
        what a failing test prints."""
        lines = [f"sealcheck verdict: {self.verdict} (seed {self.seed})"]
        if self.verdict == "UNKNOWN":  # the reason first, before what it caused
            lines += [f"  unknown because: {p}" for p in self.problems[:5]]
        lines += self.why_lines(5)
        if self.verdict != "UNKNOWN":
            lines += [f"  unknown because: {p}" for p in self.problems[:5]]
        if not (self.run_dir / "results.json").exists():
            tail = "\n".join(self.output.strip().splitlines()[-15:])
            lines.append(f"the run was not judged (harness exit {self.exit_code}):\n{tail}")
        lines.append(f"report: {self.report}")
        lines += [f"reproduce: {cmd}" for cmd in self.reproduce]
        return "\n".join(lines)

    def assert_valid(self) -> None:
        """Fail the calling test (with :meth:`summary`) unless the verdict is VALID."""
        __tracebackhide__ = True
        if self.verdict != "VALID":
            raise VerdictError(self.summary(), self)

    def assert_invalid(self, *checkers: str) -> None:
        """Fail unless the verdict is INVALID (and, if given, each of ``checkers`` failed):
        for tests that prove a broken system is caught."""
        __tracebackhide__ = True
        if self.verdict != "INVALID":
            raise VerdictError(f"expected INVALID\n{self.summary()}", self)
        missing = [c for c in checkers if c not in self.failing_checkers]
        if missing:
            raise VerdictError(f"expected {missing} to fail\n{self.summary()}", self)


def read_result(run_dir: Path, seed: int, exit_code: int, output: str) -> ChaosResult:
    """The result of the run stored in ``run_dir``: the verdict its checkers compose to
    (:func:`sealcheck.rundir.judged.proven`), UNKNOWN, saying why, when it was not judged (a
    run that crashed, a run being re-judged or a check of some checkers only is never taken as
    valid) or when ``results.json`` does not match its checkers or its report. An UNKNOWN
    result's first problem is its reason (the files' disagreement, else
    :func:`sealcheck.rundir.archive.verdict_reason`)."""
    try:
        results: dict[str, Any] = json.loads(read_text(run_dir / "results.json", run_dir))
    except (OSError, ValueError) as exc:
        why = (f"no results.json: {exc}",)
        return ChaosResult("UNKNOWN", run_dir, seed, exit_code, problems=why, output=output)
    try:
        meta: dict[str, Any] = json.loads(read_text(run_dir / "test.json", run_dir))
    except (OSError, ValueError):
        meta = {}
    failing, examples = [], []
    unit = "step" if bindings_kept(results, read_facts(results)) else "state"
    for name, r in sorted(results.get("checkers", {}).items()):
        if r.get("valid") is not True and not is_not_applicable(r):
            failing.append(name)
        for a in r.get("anomalies", []):
            context = current_context(a.get("context") or {})
            where = str(context.get("batch", ""))
            summary = AnomalySummary(
                name, a["kind"], a.get("key"), a.get("step"), where, a.get("detail") or "", unit
            )
            examples.append(dataclasses.replace(summary, version=_version(context)))
    examples.sort(key=lambda a: step_order(a.step, a.checker))  # the first wrong step first
    inputs = results.get("inputs", {})
    shown = proven(results, report_verdict(run_dir / "report.html"))  # never the flag alone
    verdict = VERDICT_WORDS[shown.valid]
    problems = [str(p) for p in inputs.get("problems", [])]
    if results.get("partial") or results.get(REJUDGING):  # not a complete judgement
        verdict = "UNKNOWN"
    reason = shown.disagreement(str(run_dir)) or verdict_reason(results)
    if verdict == "UNKNOWN" and reason is not None and reason not in problems:
        problems.insert(0, reason)  # a partial check, or the first checker that could not run
    return ChaosResult(
        verdict,
        run_dir,
        seed,
        exit_code,
        tuple(failing),
        tuple(examples),
        tuple(problems),
        tuple(meta.get("reproduce", [])),
        output,
        str(meta.get(UNPLANNED) or ""),
    )


def _version(context: dict[str, Any]) -> str:
    """The version of the incarnation that started last before an anomaly's step was sealed
    (:meth:`sealcheck.rundir.history.History.context_at`), "" for a system without versions."""
    start = context.get(LAST_START)
    value = start.get("value") if isinstance(start, dict) else None
    version = value.get("version") if isinstance(value, dict) else None
    return version if isinstance(version, str) else ""
