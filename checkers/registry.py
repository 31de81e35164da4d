"""The registry of checkers and the runner that composes them.

A checker is a function ``RunData -> CheckResult``; adding one is one module plus one line in
:data:`CHECKERS`. A checker that raises yields ``unknown`` with the error, never a crash of
the whole analysis.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Iterable

from checkers import (
    bindings,
    completeness,
    diff_of_one,
    no_phantoms,
    seal_monotonic,
    sealed_state,
    unique_key,
)
from checkers.inputs import RunData
from checkers.result import CheckResult, RunResult

Checker = Callable[[RunData], CheckResult]

CHECKERS: dict[str, Checker] = {
    "diff_of_one": diff_of_one.check,
    "unique_key": unique_key.check,
    "sealed_state": sealed_state.check,
    "bindings": bindings.check,
    "completeness": completeness.check,
    "no_phantoms": no_phantoms.check,
    "seal_monotonic": seal_monotonic.check,
}


def run_checkers(run: RunData, names: Iterable[str] | None = None) -> RunResult:
    """Run the named checkers (all by default) and compose their results."""
    chosen = list(CHECKERS) if names is None else list(names)
    unknown = [n for n in chosen if n not in CHECKERS]
    if unknown:
        raise ValueError(f"unknown checker(s) {unknown}; known: {', '.join(CHECKERS)}")
    results: dict[str, CheckResult] = {}
    for name in chosen:
        start = time.monotonic()
        try:
            result = CHECKERS[name](run)
        except Exception as exc:  # a checker that raises is unknown, not a crash
            result = CheckResult(name, None, error=f"{type(exc).__name__}: {exc}")
            result.counts["traceback_lines"] = len(traceback.format_exc().splitlines())
        result.took_s = round(time.monotonic() - start, 3)
        results[name] = result
    return RunResult(results)
