"""The report's timeline, drawn from a stored run's history.

One time base for the whole report: seconds since the harness started the run (the history's
clock, ``time`` of every op). On it:

* series: acknowledged writes per second, and each collection's observed upper over time;
* fault markers, each in a legend group (:data:`sealcheck.rundir.marks.GROUPS`): intervals (pause →
  resume, broker down → up, partition, zombie) and instants (kill, storage faults); a
  failpoint is drawn where it *fired* (the incarnation's exit) or, armed and never fired,
  where it was armed, apart;
* the system under test's down-time (an incarnation's exit → the next start) and its starts;
* the schedule's zero (``faults-start``; ``warmed-up`` in runs older than that op).

The seal lag is not computed here: the checkers record it in ``results.json``
(:class:`sealcheck.rundir.facts.SealLag`), on this same time base.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sealcheck.rundir.coverage import outcomes
from sealcheck.rundir.history import History
from sealcheck.rundir.marks import Mark
from sealcheck.rundir.names import SUT_EXIT, SUT_START


@dataclass(frozen=True)
class Marker:
    """One thing drawn on the time base: an instant (``end`` None) or an interval."""

    group: str
    at: float
    end: float | None
    label: str


@dataclass
class Timeline:
    """Everything the report draws, in seconds since the run started."""

    end_s: float = 0.0
    rate: list[tuple[float, int]] = field(default_factory=list)  # (second, ok writes)
    uppers: dict[str, list[tuple[float, int]]] = field(default_factory=dict)
    intervals: list[tuple[float, float, str]] = field(default_factory=list)
    instants: list[tuple[float, str]] = field(default_factory=list)
    restarts: list[tuple[float, str]] = field(default_factory=list)
    #: every fault, down-time and start, grouped for the legend
    markers: list[Marker] = field(default_factory=list)
    #: where the fault schedule's zero is on this time base (None: no faults phase recorded)
    faults_start_s: float | None = None


def _s(op: dict[str, Any]) -> float:
    return int(op.get("time", 0)) / 1e9


def faults_start(ops: list[dict[str, Any]]) -> float | None:
    """The schedule's zero on the history's clock: the ``faults-start`` op, else (older runs)
    the end of the warm-up."""
    warm = None
    for op in ops:
        if op.get("process") == "harness" and op.get("f") == "faults-start":
            return _s(op)
        if op.get("process") == "harness" and op.get("f") == "warmed-up" and warm is None:
            warm = _s(op)
    return warm


def build_timeline(history: History, marks: Mapping[str, Mark] | None = None) -> Timeline:
    """The timeline of a history, its fault actions drawn as the run's ``marks`` say (as
    ``test.json`` keeps them: :func:`sealcheck.rundir.marks.stored_marks`; None: no fault is
    drawn, only the system's starts and exits)."""
    ops = history.ops
    acks = history.collect(history.acked.lazy().select("time", "partition", "offset"))
    seconds = acks["time"].to_numpy() / 1e9
    tl = Timeline(end_s=max([*(_s(o) for o in ops), *seconds[-1:]], default=0.0))
    if seconds.size:
        counts = np.bincount(seconds.astype(int))
        tl.rate = [(float(i), int(c)) for i, c in enumerate(counts)]
    tl.faults_start_s = faults_start(ops)
    _faults(ops, tl, marks or {})
    _incarnations(ops, history.versions(), tl)
    return tl


def _faults(ops: list[dict[str, Any]], tl: Timeline, drawn: Mapping[str, Mark]) -> None:
    """Fault intervals and instants, from the nemesis ops, each drawn as ``drawn`` says."""
    settled = outcomes(ops)
    opened: dict[tuple[str, str], tuple[float, str, str]] = {}
    for op in ops:
        f, t, value = str(op.get("f")), _s(op), op.get("value") or {}
        if op.get("process") == "observer":
            if f == "uppers" and isinstance(value, dict):
                for coll, upper in value.items():
                    tl.uppers.setdefault(coll, []).append((t, int(upper)))
            continue
        if op.get("process") != "nemesis" or op.get("type") != "invoke" or f not in drawn:
            continue
        mark = drawn[f]
        which = " ".join(str(value[k]) for k in mark.which if k in value)
        label = f"{mark.label} {which}".strip()
        if mark.kind == "start":
            opened[(f, which)] = (t, label, mark.group)
        elif mark.kind == "end" and (mark.opens or "", which) in opened:
            since, text, group = opened.pop((mark.opens or "", which))
            tl.intervals.append((since, t, text))
            tl.markers.append(Marker(group, since, t, text))
        elif mark.kind == "instant" and mark.group == "failpoint":
            done = settled.get(value.get("action", -1), {})
            if done.get("outcome") != "happened":  # fired ones are drawn at the exit
                why = done.get("why") or done.get("outcome") or "not settled"
                point = value.get("failpoint", "?")
                tl.markers.append(
                    Marker(
                        "failpoint-idle", t, None, f"failpoint {point} armed, never fired: {why}"
                    )
                )
            tl.instants.append((t, str(value.get("failpoint", label))))
        elif mark.kind == "instant":
            tl.instants.append((t, label))
            tl.markers.append(Marker(mark.group, t, None, label))
    for since, text, group in opened.values():  # never closed: healed in the final phase
        tl.intervals.append((since, tl.end_s, f"{text} (healed at the end)"))
        tl.markers.append(Marker(group, since, tl.end_s, f"{text} (healed at the end)"))


def _incarnations(ops: list[dict[str, Any]], versions: dict[int, str], tl: Timeline) -> None:
    """Starts (with the version each runs, ``versions``, for a job that declares several),
    exits (a fired failpoint is drawn at its incarnation's exit) and down-time."""
    down_since: tuple[float, str, bool] | None = None  # (since, why, crashed)
    for op in ops:
        f, t, value = op.get("f"), _s(op), op.get("value") or {}
        if f == SUT_START:
            n = value.get("incarnation")
            runs = f" ({versions[n]})" if n in versions else ""
            tl.restarts.append((t, f"incarnation {n}{runs}"))
            tl.markers.append(Marker("start", t, None, f"incarnation {n} started{runs}"))
            if down_since is not None:
                since, why, _ = down_since
                tl.markers.append(Marker("down", since, t, f"down {t - since:.1f} s: {why}"))
                down_since = None
        elif f == SUT_EXIT:
            n, code, point = value.get("incarnation"), value.get("code"), value.get("failpoint")
            why = f"incarnation {n} exited {code}" + (f" at failpoint {point}" if point else "")
            if point:
                tl.markers.append(Marker("failpoint", t, None, f"failpoint {point} fired: {why}"))
            down_since = (t, why, code != 0)
    if down_since is not None and down_since[2] and down_since[0] < tl.end_s:
        since, why, _ = down_since  # a crash nobody restarted (a clean stop ends the run)
        tl.markers.append(Marker("down", since, tl.end_s, f"down until the end: {why}"))
