"""The facts of a judged run that the report shows (:class:`sealcheck.rundir.facts.RunFacts`,
written into ``results.json`` by :func:`sealcheck.checkers.check_run`): the step assignment
summarised, the seal lag and its series, the failing keys' story; whether the output keeps
bindings and, for one that keeps none, its states as its export records them (no step
assignment or seal lag then: one line says why). They use the step assignment
the checkers judge by (:func:`sealcheck.checkers.replay.assign_steps` over the ranges of the
bindings sealed in both ``bindings`` and ``data``), so the report computes nothing.

Each fact is computed on its own: one that cannot be (an input that cannot be read) says why
in one line and the others are still recorded; the verdict is never touched by them.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import polars as pl

from sealcheck.checkers.inputs import RunData
from sealcheck.checkers.replay import assign_steps, binding_ranges
from sealcheck.checkers.result import Anomaly, RunResult
from sealcheck.checkers.stories import stories
from sealcheck.rundir.facts import MAX_POINTS, RunFacts, SealLag, StatesSeen, StepAssignment
from sealcheck.rundir.judged import step_order
from sealcheck.rundir.states import SAMPLES

#: why a run whose inputs could not be loaded, or were not judged, has no facts
NOT_LOADED = "not computed: the inputs could not be read (see the input problems)"
NOT_JUDGED = "not computed: the inputs were not judged (see the input problems)"
#: why an output without bindings has no step assignment and no seal lag
NO_BINDINGS_STEPS = (
    "this output keeps no bindings: which offsets each state read is unknown, so no input "
    "record is assigned to a state"
)
NO_BINDINGS_LAG = (
    "this output keeps no bindings: no write is ever seen sealed, so there is no seal lag to "
    "measure"
)
#: why an output without bindings has no record of its states
STATES_NOT_RECORDED = (
    "not recorded: this run's export holds no record of its states (exported before the "
    "harness recorded them)"
)


def sealed_ranges(run: RunData) -> pl.DataFrame:
    """The bound offsets per partition and step sealed in both ``bindings`` and ``data``: the
    ranges the checkers assign records by (:meth:`RunData.winners`)."""
    sealed = min(run.uppers.get("data", 0), run.uppers.get("bindings", 0))
    return binding_ranges(run.collection("bindings"), sealed)


def step_assignment(records: pl.Series, acked: pl.Series) -> StepAssignment:
    """Summarise the steps that bound the input records (``records``: a step per record, null
    when none) and the acknowledged writes (``acked``)."""
    per_step = records.drop_nulls().value_counts()
    counts = per_step["count"] if per_step.height else pl.Series([], dtype=pl.UInt32)
    steps = per_step[records.name] if per_step.height else pl.Series([], dtype=pl.Int64)
    return StepAssignment(
        records=records.len(),
        bound=records.len() - records.null_count(),
        steps=per_step.height,
        first=None if steps.is_empty() else int(steps.min()),  # type: ignore[arg-type]
        last=None if steps.is_empty() else int(steps.max()),  # type: ignore[arg-type]
        most=0 if counts.is_empty() else int(counts.max()),  # type: ignore[arg-type]
        acked=acked.len(),
        acked_bound=acked.len() - acked.null_count(),
    )


def seal_lag(acks: pl.DataFrame, stepped: pl.Series, ops: list[dict[str, Any]]) -> SealLag:
    """Ack → sealed over the acknowledged writes (``acks``: ``time, partition, offset``;
    ``stepped``: the step that bound each, null when none) seen sealed: the first ``uppers``
    observation with ``data`` past the step (the observer samples every 0.25 s, so lags are
    rounded up to that), and the series of the slowest lag per stretch of acknowledgement
    time (at most :data:`~sealcheck.rundir.facts.MAX_POINTS` stretches of whole seconds)."""
    seen = [
        (int(o.get("time", 0)) / 1e9, int(o["value"].get("data", 0)))
        for o in ops
        if o.get("f") == "uppers" and isinstance(o.get("value"), dict)
    ]
    if not acks.height or not seen:
        return SealLag(0)
    times = np.array([t for t, _ in seen])
    uppers = np.maximum.accumulate(np.array([u for _, u in seen]))
    bound = stepped.is_not_null().to_numpy()
    step = stepped.fill_null(0).to_numpy()
    first = np.searchsorted(uppers, step, side="right")  # first observation with upper > step
    sealed = bound & (first < len(times))
    if not sealed.any():
        return SealLag(0)
    ack_t = acks["time"].to_numpy()[sealed] / 1e9
    lag = np.maximum(times[first[sealed]] - ack_t, 0.0)
    bucket = float(max(1, math.ceil((float(ack_t.max()) + 1) / MAX_POINTS)))
    slowest = (
        pl.DataFrame({"b": (ack_t // bucket).astype(np.int64), "lag": lag})
        .group_by("b")
        .agg(pl.col("lag").max())
        .sort("b")
    )
    return SealLag(
        count=int(lag.size),
        p50_s=float(np.percentile(lag, 50)),
        p99_s=float(np.percentile(lag, 99)),
        max_s=float(lag.max()),
        bucket_s=bucket,
        series=[(b * bucket, float(v)) for b, v in slowest.iter_rows()],
    )


def states_seen(run: RunData) -> tuple[StatesSeen | None, str]:
    """The states of an output without bindings, as its export records them, summarised (and
    why there is no summary: the output keeps bindings, or its export recorded none)."""
    if run.keeps_bindings:
        return None, "the output keeps bindings: its steps are the sealed steps"
    record = run.states
    if record is None:
        return None, STATES_NOT_RECORDED
    named = [s.committed for s in record.named if s.committed is not None]
    summary = StatesSeen(
        by=record.by,
        seen=len(record.states),
        checkpoint=record.checkpoint or record.by != SAMPLES,
        named=len(record.named),
        first_batch=min(named, default=None),
        last_batch=max(named, default=None),
        in_flight=sum(s.in_flight for s in record.states),
    )
    return summary, ""


def listed(result: RunResult) -> list[Anomaly]:
    """The example anomalies in the order the report lists them (the first wrong step first,
    then by checker; those without a step last)."""
    pairs = [(name, a) for name, r in result.checkers.items() for a in r.anomalies]
    return [a for _, a in sorted(pairs, key=lambda p: step_order(p[1].step, p[0]))]


def _why(exc: Exception) -> str:
    return f"could not be computed ({type(exc).__name__}: {exc})"


def run_facts(run: RunData, result: RunResult) -> RunFacts:
    """The facts of a run the checkers judged (``result``); a run whose inputs were not judged
    (refused or unreadable: no checker ran) gets none, each saying so."""
    if not result.checkers:
        return RunFacts.missing(NOT_JUDGED)
    facts = _run_facts(run, result)
    facts.bindings_kept = run.keeps_bindings
    try:
        facts.states, facts.states_why = states_seen(run)
    except Exception as exc:
        facts.states_why = _why(exc)
    return facts


def _run_facts(run: RunData, result: RunResult) -> RunFacts:
    """:func:`run_facts` but for the output's bindings and states (each fact on its own)."""
    facts = RunFacts()
    try:
        ranges = sealed_ranges(run)
    except Exception as exc:  # facts never change the verdict: say why, in one line
        return RunFacts.missing(_why(exc))
    if not run.keeps_bindings:  # nothing is bound: said once, not shown as 0 of N
        facts.steps_why, facts.lag_why = NO_BINDINGS_STEPS, NO_BINDINGS_LAG
    else:
        try:
            acks = run.history.collect(
                run.history.acked.lazy().select("time", "partition", "offset")
            )
            stepped = assign_steps(acks, ranges)
        except Exception as exc:
            return RunFacts.missing(_why(exc))
        try:
            facts.steps = step_assignment(assign_steps(run.classified(), ranges), stepped)
        except Exception as exc:
            facts.steps_why = _why(exc)
        try:
            facts.seal_lag = seal_lag(acks, stepped, run.history.ops)
            if not facts.seal_lag.count:
                facts.lag_why = "no acknowledged write was seen sealed"
        except Exception as exc:
            facts.lag_why = _why(exc)
    anomalies = listed(result)
    try:
        if anomalies:
            facts.stories, facts.story_why = stories(run, ranges, anomalies)
        else:
            facts.story_why = "no anomalies"
    except Exception as exc:
        facts.story_why = _why(exc)
    return facts
