"""What the report shows of a run halted early and of incarnations that exited by themselves,
read from the history as the harness recorded it (``harness info halted``; a ``sut-exit`` op's
``by_itself``, ``lived_s``, ``error``, ``during_faults`` and ``log_tail``:
:mod:`sealcheck.harness.run.exits`). Renders only: nothing is computed from the logs."""

from __future__ import annotations

from typing import Any

from sealcheck.rundir.history import HALTED
from sealcheck.rundir.names import SUT_EXIT


def halted(ops: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The halt of the run (None: it was not halted): its ``reason`` and, when an incarnation's
    exits caused it, that incarnation (``incarnation``) and its log's last lines (``tail``,
    "" when not recorded)."""
    halt = next(
        (o for o in ops if o.get("process") == "harness" and o.get("f") == HALTED),
        None,
    )
    value = halt.get("value") if halt is not None else None
    if not isinstance(value, dict):
        return None
    n = value.get("incarnation")
    tail = ""
    if n is not None:
        for op in ops:
            v = op.get("value")
            if op.get("f") == SUT_EXIT and isinstance(v, dict) and v.get("incarnation") == n:
                tail = str(v.get("log_tail") or "")
    return {"reason": str(value.get("reason")), "incarnation": n, "tail": tail}


def how_it_ended(value: dict[str, Any]) -> str:
    """A ``sut-exit`` op's exit by itself in words ("" for one the harness explains), e.g.
    "by itself after 0.1 s (code 0), no fault explains it: it printed nothing" — the words the
    run printed when it happened (:func:`sealcheck.harness.run.exits.exit_line`)."""
    if not value.get("by_itself"):
        return ""
    why = "while faults were injected" if value.get("during_faults") else "no fault explains it"
    error = value.get("error") or "it printed nothing"
    return f"by itself after {value.get('lived_s')} s (code {value.get('code')}), {why}: {error}"
