"""The registry of checkers and the runner that composes them.

A checker is a function ``RunData -> CheckResult``; adding one is one module plus one line in
:data:`CHECKERS`. A checker that raises yields ``unknown`` with the error, never a crash of
the whole analysis. Checkers run :data:`JUDGES` at a time, in threads: each reads
:class:`~sealcheck.checkers.inputs.RunData` (whose derived frames are computed once, one at a
time) and changes nothing in it.
"""

from __future__ import annotations

import os
import queue
import threading
import time
import traceback
from collections.abc import Callable, Iterable

import polars as pl
import pyarrow as pa

from sealcheck.checkers import (
    as_of,
    bindings,
    completeness,
    diff_of_one,
    frontiers,
    no_phantoms,
    seal_monotonic,
    sealed_state,
    unique_key,
    versions,
)
from sealcheck.checkers.inputs import RunData
from sealcheck.checkers.prefix import check as prefix_check
from sealcheck.checkers.result import CheckResult, RunResult
from sealcheck.rundir import files
from sealcheck.rundir.history import HistoryError

Checker = Callable[[RunData], CheckResult]

CHECKERS: dict[str, Checker] = {
    "diff_of_one": diff_of_one.check,
    "unique_key": unique_key.check,
    "sealed_state": sealed_state.check,
    "bindings": bindings.check,
    "frontiers": frontiers.check,
    "completeness": completeness.check,
    "no_phantoms": no_phantoms.check,
    "seal_monotonic": seal_monotonic.check,
    "as_of": as_of.check,
    "prefix": prefix_check.check,
    "versions": versions.check,
}


#: Checkers judged at once. Two: ``prefix``, the longest at scale, is numpy on one core, and
#: the others' polars work takes the other (judging 10M records: 19-21 s one after the other,
#: 13-14 s two at a time, ~1 GB more at the peak; ``docs/scale.md``). More would only share
#: the same two cores here.
JUDGES = min(2, len(os.sched_getaffinity(0)))

#: Started first, so that the rest run beside them: the longest at scale.
_LONGEST = ("prefix",)


def unknown_checkers(names: Iterable[str]) -> list[str]:
    """The names that are not registered checkers."""
    return [n for n in names if n not in CHECKERS]


def read_inputs(run: RunData) -> str | None:
    """Read the topic and the export now (what :meth:`RunData.prepare` reads; the checkers
    reuse it): None, or one line naming the file that cannot be read and why — a corrupt page
    or a column of the wrong type, found only when the data is read."""
    reads: tuple[tuple[str, Callable[[], object]], ...] = (
        (files.TOPIC, run.classified),
        (files.UPDATES, lambda: [run.change_points(n) for n in ("bindings", "data", "errors")]),
    )
    for rel, read in reads:
        try:
            read()
        except (OSError, pl.exceptions.PolarsError, pa.ArrowException) as exc:
            return (
                f"{rel}: cannot be read ({files.why_unreadable(exc)}): restore it from the run, "
                "or re-run the test"
            )
    return None


def run_checkers(run: RunData, names: Iterable[str] | None = None) -> RunResult:
    """Prove the inputs whole, run the named checkers (all by default), compose the results.

    Inputs that are not the run's own (:attr:`RunData.refusals`) or that cannot be read
    (:func:`read_inputs`) are not judged at all; a history that does not reach its end makes
    a would-be valid verdict unknown.
    """
    chosen = list(CHECKERS) if names is None else list(names)
    unknown = unknown_checkers(chosen)
    if unknown:
        raise ValueError(f"unknown checker(s) {unknown}; known: {', '.join(CHECKERS)}")
    try:
        problems = run.input_problems()
    except HistoryError as exc:
        problems = [*run.refusals, f"the history cannot be read: {exc}"]
    acks: tuple[int | None, int | None] = (
        run.acked().height if "acked" in run.memoised() else None,
        run.history.written_acks(),
    )
    if run.refusals:
        return RunResult({}, problems, run.notes, acks)
    unreadable = read_inputs(run)
    if unreadable is not None:  # one line naming the file, not an error in every checker
        return RunResult({}, [unreadable, *problems], run.notes, acks)
    results = _judge_all(run, chosen)
    if acks[0] is None and "acked" in run.memoised():
        acks = (run.acked().height, acks[1])
    not_run = [c for c in CHECKERS if c not in results]
    return RunResult(results, problems, run.notes, acks, not_run)


def _judge_all(run: RunData, chosen: list[str]) -> dict[str, CheckResult]:
    """Every chosen checker's result, in the order chosen, judged :data:`JUDGES` at a time
    (:data:`_LONGEST` first, the rest as chosen). The judges are daemon threads and this one
    waits in short slices, so Ctrl-C stops it at once: no checker starts after it, and one
    still running (numpy cannot be interrupted) is left behind, not waited for at exit."""
    if JUDGES < 2:
        return {name: _judge(run, name) for name in chosen}
    todo: queue.SimpleQueue[str] = queue.SimpleQueue()
    for name in sorted(chosen, key=lambda n: n not in _LONGEST):  # stable: else as chosen
        todo.put(name)
    results: dict[str, CheckResult] = {}
    raised: list[BaseException] = []
    stop = threading.Event()

    def judge() -> None:
        while not stop.is_set():
            try:
                name = todo.get_nowait()
            except queue.Empty:
                return
            try:
                results[name] = _judge(run, name)
            except BaseException as exc:  # not a checker's own error: raised by the caller
                raised.append(exc)
                stop.set()

    judges = [threading.Thread(target=judge, name="checker", daemon=True) for _ in range(JUDGES)]
    try:  # Ctrl-C may come while a judge is still being started: stop covers that too
        for thread in judges:
            thread.start()
        for thread in judges:
            while thread.is_alive():
                thread.join(0.2)  # a wait with no timeout would not wake for Ctrl-C
    finally:
        stop.set()
    if raised:
        raise raised[0]
    return {name: results[name] for name in chosen}


def _judge(run: RunData, name: str) -> CheckResult:
    """One checker's result, timed; one that raises is unknown, not a crash."""
    start = time.monotonic()
    try:
        result = CHECKERS[name](run)
    except Exception as exc:
        result = CheckResult(name, None, error=f"{type(exc).__name__}: {exc}")
        result.traceback = traceback.format_exc()
    result.took_s = round(time.monotonic() - start, 3)
    for anomaly in result.anomalies:  # name the step as the system does (batch, versions)
        if anomaly.step in run.step_names:
            anomaly.context.setdefault("batch", run.step_names[anomaly.step])
    return result
