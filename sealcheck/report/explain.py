"""Words for the report: an anomaly's context as sentences on the report's time base
("2.1 s after kill-sut at 140.3 s"), and the fault schedule as planned versus what
happened, with both times on that base (the schedule's own clock starts after the warm-up).
"""

from __future__ import annotations

from typing import Any

from sealcheck.rundir.coverage import outcomes
from sealcheck.rundir.names import LAST_EXIT, LAST_START, current_action, current_context


def _at(ns: Any) -> float | None:
    return ns / 1e9 if isinstance(ns, int | float) else None


def _what(value: Any) -> str:
    """An action's or op's value as ``k=v`` words (empty values left out)."""
    if not isinstance(value, dict):
        return "" if value is None else str(value)
    skip = ("action", "outcome")
    words = [f"{k}={v}" for k, v in value.items() if k not in skip and v not in (None, "")]
    effect = value.get("effect")
    if isinstance(effect, dict) and effect.get("evidence"):  # what it did, as a person reads it
        words = [w for w in words if not w.startswith("effect=")] + [f"({effect['evidence']})"]
    return " ".join(words)


def context_lines(context: dict[str, Any], states: bool = False) -> list[str]:
    """An anomaly's context (see :meth:`sealcheck.rundir.history.History.context_for_step`) as
    lines a person reads: when the step was sealed (``states``: when the state of an output
    without bindings was first seen; or the write acknowledged), and how long after the last
    fault and restart. Runs judged before the rename name the keys the old way."""
    context = current_context(context)
    sealed = _at(context.get("sealed_by_ns"))
    acked = _at(context.get("acked_ns"))
    lines = []
    if acked is not None:
        lines.append(f"write acknowledged at {acked:.1f} s")
    elif sealed is not None:
        seen = "state first seen" if states else "step first seen sealed"
        lines.append(f"{seen} at {sealed:.1f} s")
    elif not states:
        lines.append("step never seen sealed")
    seal = "the state was seen" if states else "the seal"
    ref, event = (acked, "the acknowledgement") if acked is not None else (sealed, seal)
    for name, verb in (
        ("last_nemesis", "the last fault before"),
        (LAST_EXIT, "the last exit before"),
        (LAST_START, "the last start before"),
    ):
        op = context.get(name)
        if not isinstance(op, dict):
            continue
        t = _at(op.get("time"))
        value = op.get("value") or {}
        who = (
            f"incarnation {value.get('incarnation')}"
            if isinstance(value, dict) and "incarnation" in value
            else ""
        )
        if who and value.get("version"):  # a job with versions: which one ran from here
            who += f" ({value['version']})"
        what = {
            "last_nemesis": f"{op.get('f')} {_what(value)}".strip(),
            LAST_EXIT: f"{who} exited {value.get('code') if who else ''}"
            + (
                f" at failpoint {value['failpoint']}"
                if isinstance(value, dict) and value.get("failpoint")
                else ""
            ),
            LAST_START: f"{who} started",
        }[name]
        if t is None:
            lines.append(f"{verb}: {what}")
        elif ref is not None:
            lines.append(f"{ref - t:.1f} s after {what} (at {t:.1f} s; {verb} {event})")
        else:
            lines.append(f"{verb}: {what} at {t:.1f} s")
    latest = _at(context.get("latest_write_acked_ns"))
    if latest is not None:
        lines.append(f"the key's latest write was acknowledged at {latest:.1f} s")
    if context.get("batch"):
        lines.append(str(context["batch"]))
    known = {"sealed_by_ns", "acked_ns", "latest_write_acked_ns", "batch"}
    known |= {"last_nemesis", LAST_EXIT, LAST_START}
    lines += [f"{k}: {v}" for k, v in sorted(context.items()) if k not in known]
    return lines


def schedule_rows(
    schedule: list[dict[str, Any]], ops: list[dict[str, Any]], zero: float | None
) -> list[dict[str, Any]]:
    """One row per planned action: when it was planned and when it happened, both in seconds
    since the run started (``zero``: the schedule's zero on that base), its outcome and why."""
    settled = outcomes(ops)
    invoked: dict[int, float] = {}
    for op in ops:
        value = op.get("value")
        if (
            op.get("process") == "nemesis"
            and op.get("type") == "invoke"
            and isinstance(value, dict)
            and isinstance(value.get("action"), int)
        ):
            invoked.setdefault(value["action"], int(op.get("time", 0)) / 1e9)
    rows = []
    for i, a in enumerate(current_action(a) for a in schedule):  # old names as now
        done = settled.get(i, {})
        planned = None if zero is None else zero + float(a.get("at_s", 0.0))
        happened = invoked.get(i)
        extra = {
            k: v
            for k, v in done.items()
            if k not in ("outcome", "action", "f", "why", *(a.get("value") or {}))
        }
        rows.append(
            {
                "n": i,
                "nemesis": a.get("nemesis"),
                "f": a.get("f"),
                "value": _what(a.get("value")),
                "schedule_at": f"{float(a.get('at_s', 0.0)):.2f} s",
                "planned": "-" if planned is None else f"{planned:.1f} s",
                "happened": "-" if happened is None else f"{happened:.1f} s",
                "late": ""
                if planned is None or happened is None
                else f"{happened - planned:+.1f} s",
                "outcome": done.get("outcome", "not run"),
                "why": done.get("why") or _what(extra),
            }
        )
    return rows
