"""Window coverage: which of the system's failure windows a run really reached.

A failpoint is *hit* when an incarnation died there: the supervisor's ``pipeline-exit`` op
names the failpoint that fired, so the history itself records every window reached. Planned
arming that never fired (disarmed and replaced by a kill) is counted apart, and so are the
other nemeses' actions (planned vs. happened). The windows a system has come from
``test.json``'s ``windows`` (its failpoints, written at the start of the run).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Window:
    """One failure window (a failpoint) or one kind of fault action, and how often it was
    planned, reached (``hit``) and missed (planned but replaced by a kill / not happened)."""

    name: str
    where: str
    planned: int
    hit: int
    missed: int


def coverage(meta: dict[str, Any], ops: list[dict[str, Any]]) -> list[Window]:
    """Every window of the system (failpoints first), then every other kind of planned action."""
    schedule = meta.get("schedule", [])
    settled = outcomes(ops)
    exits = [o.get("value", {}) for o in ops if o.get("f") == "pipeline-exit"]
    hit = Counter(str(v["failpoint"]) for v in exits if v.get("failpoint"))
    planned: Counter[str] = Counter()
    missed: Counter[str] = Counter()
    others: dict[str, list[int]] = {}
    for i, action in enumerate(schedule):
        outcome = settled.get(i, {}).get("outcome", "not run")
        point = action.get("value", {}).get("failpoint")
        if action.get("f") == "arm-failpoint" and point:
            planned[point] += 1
            missed[point] += outcome != "happened"
        elif action.get("f") not in ("heal",):
            row = others.setdefault(f"{action['nemesis']}: {action['f']}", [0, 0])
            row[0] += 1
            row[1] += outcome == "happened"
    windows: dict[str, str] = dict(meta.get("windows", {}))
    for point in sorted(set(planned) | set(hit)):
        windows.setdefault(point, "")
    out = [Window(p, w, planned[p], hit[p], missed[p]) for p, w in windows.items()]
    out += [Window(k, "", n, ok, n - ok) for k, (n, ok) in sorted(others.items())]
    return out


def outcomes(ops: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """Per planned action (its index in the schedule), what finally happened: the value of
    its last ``nemesis`` op that carries an ``outcome`` (a settled pending action's ``outcome``
    op comes after its invoke)."""
    out: dict[int, dict[str, Any]] = {}
    for op in ops:
        value = op.get("value")
        if op.get("process") != "nemesis" or not isinstance(value, dict):
            continue
        if isinstance(value.get("action"), int) and "outcome" in value:
            out[value["action"]] = value
    return out


def unreached(windows: list[Window], failpoints: dict[str, str]) -> list[str]:
    """The system's failpoints that no incarnation died at."""
    return [w.name for w in windows if w.name in failpoints and w.hit == 0]
