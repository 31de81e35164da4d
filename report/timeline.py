"""The report's timeline and seal lag, computed from a stored run (history + store).

* series: acknowledged writes per second, and each collection's observed upper over time;
* fault intervals (pause→resume, broker kill→start) and instants (kill, failpoint), and
  pipeline restarts;
* seal lag: for every acknowledged write, the time from its acknowledgement to the first
  observation of ``data`` sealed past the step that bound it (the observer samples every
  0.25 s, so lags are rounded up to that).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from nemeses.registry import marks
from rundir.history import History


@dataclass
class Timeline:
    """Everything the report draws, in seconds since the run started."""

    end_s: float = 0.0
    rate: list[tuple[float, int]] = field(default_factory=list)  # (second, ok writes)
    uppers: dict[str, list[tuple[float, int]]] = field(default_factory=dict)
    intervals: list[tuple[float, float, str]] = field(default_factory=list)
    instants: list[tuple[float, str]] = field(default_factory=list)
    restarts: list[tuple[float, str]] = field(default_factory=list)
    lag_s: dict[str, float] = field(default_factory=dict)  # p50 / p99 / max / count


def _s(op: dict[str, Any]) -> float:
    return int(op.get("time", 0)) / 1e9


def build_timeline(history: History, ranges: pl.DataFrame | None) -> Timeline:
    """The timeline of a history (``ranges``: bound offsets per step, for the seal lag)."""
    ops = history.ops
    acks = history.collect(history.acked.lazy().select("time", "partition", "offset"))
    seconds = acks["time"].to_numpy() / 1e9
    tl = Timeline(end_s=max([*(_s(o) for o in ops), *seconds[-1:]], default=0.0))
    if seconds.size:
        counts = np.bincount(seconds.astype(int))
        tl.rate = [(float(i), int(c)) for i, c in enumerate(counts)]
    drawn = marks()  # how each nemesis draws its actions
    opened: dict[tuple[str, str], tuple[float, str]] = {}
    for op in ops:
        f, t = str(op.get("f")), _s(op)
        if op.get("process") == "observer" and isinstance(op.get("value"), dict):
            for coll, upper in op["value"].items():
                tl.uppers.setdefault(coll, []).append((t, int(upper)))
        elif op.get("process") == "nemesis" and op.get("type") == "invoke" and f in drawn:
            value = op.get("value") or {}
            mark = drawn[f]
            which = " ".join(str(value[k]) for k in ("broker", "kind") if k in value)
            label = f"{mark.label} {which}".strip()
            if mark.kind == "start":
                opened[(f, which)] = (t, label)
            elif mark.kind == "end" and (mark.opens or "", which) in opened:
                since, text = opened.pop((mark.opens or "", which))
                tl.intervals.append((since, t, text))
            elif mark.kind == "instant":
                tl.instants.append((t, str(value.get("failpoint", label))))
        elif f == "pipeline-start":
            tl.restarts.append((t, f"incarnation {op.get('value', {}).get('incarnation')}"))
    for since, text in opened.values():  # never closed: healed in the final phase
        tl.intervals.append((since, tl.end_s, f"{text} (healed at the end)"))
    tl.lag_s = seal_lag(acks, ops, ranges)
    return tl


def seal_lag(
    acks: pl.DataFrame, ops: list[dict[str, Any]], ranges: pl.DataFrame | None
) -> dict[str, float]:
    """p50 / p99 / max of ack → sealed, over the acknowledged writes (``time, partition,
    offset``) that were sealed."""
    if not acks.height or ranges is None or ranges.height == 0:
        return {}
    from checkers.replay import assign_steps

    seen = [
        (_s(o), int(o["value"].get("data", 0)))
        for o in ops
        if o.get("f") == "uppers" and isinstance(o.get("value"), dict)
    ]
    if not seen:
        return {}
    times = np.array([t for t, _ in seen])
    uppers = np.maximum.accumulate(np.array([u for _, u in seen]))
    stepped = assign_steps(acks, ranges)  # the same step assignment the checkers use
    bound = stepped.is_not_null().to_numpy()
    step = stepped.fill_null(0).to_numpy()
    # first observation with upper > step
    first = np.searchsorted(uppers, step, side="right")
    sealed = bound & (first < len(times))
    if not sealed.any():
        return {"count": 0.0}
    ack_t = acks["time"].to_numpy() / 1e9
    lag = times[first[sealed]] - ack_t[sealed]
    lag = np.maximum(lag, 0.0)
    return {
        "p50": float(np.percentile(lag, 50)),
        "p99": float(np.percentile(lag, 99)),
        "max": float(lag.max()),
        "count": float(lag.size),
    }
