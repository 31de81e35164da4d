"""Did a fault bite? Each action that happened is judged by the evidence of its effect.
(Fault evidence lives here; what an input record should do to a job's output — its
*effect* in the other sense — lives in :mod:`sealcheck.core.effects`.)

A fault counts only when it had an effect, shown by what the system reported or by what is
visible outside it. Two places hold that evidence in the history:

* the nemesis op's own value, when the nemesis could see the effect at once: it carries an
  ``effect`` dict (:func:`effect`), e.g. a power cut's dropped bytes, a frozen process's state
  ``T`` read from ``/proc``, a broker that was down after its SIGKILL;
* the supervisor's ``sut-exit`` ops, for effects that show when an incarnation ends: its
  exit ``code`` (negative: the signal; ``signal`` names it), the crash failpoint it died at
  (``failpoint``), the last failpoint event it logged (``fired``: name and action) and the last
  event it logged (``last_event``).

:func:`judge` decides per kind of action from both; the report's window coverage counts an
action as reached only when the answer is ``True``, "happened, no effect" when ``False``, and
"effect not observable" when ``None``.
"""

from __future__ import annotations

import signal
from collections.abc import Mapping, Sequence
from typing import Any

#: events an incarnation logs when it attempted a write: refused by fencing, or a step sealed
WRITE_EVENTS = ("fenced", "sealed")
#: how each failpoint action ends an incarnation: ``crash`` SIGKILLs itself, ``error`` raises
#: (the process exits with a code of its own, not a signal)
ACTION_EXITS = {"crash": "SIGKILL", "error": "an error exit"}


def effect(bit: bool | None, evidence: str) -> dict[str, Any]:
    """The ``effect`` dict an action's value carries: whether it bit (None: not observable)
    and the evidence, in words."""
    return {"effect": bit, "evidence": evidence}


def signal_name(code: Any) -> str | None:
    """The signal an exit code names (negative: killed by that signal), else None."""
    if not isinstance(code, int) or code >= 0:
        return None
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def exit_matches(action: str, code: Any) -> bool:
    """Whether an exit ``code`` is what failpoint ``action`` does: ``crash`` exits by SIGKILL,
    ``error`` with a positive code (the error reached the caller and ended the process)."""
    if action == "crash":
        return signal_name(code) == "SIGKILL"
    if action == "error":
        return isinstance(code, int) and code > 0
    return False


def _how(exit_: Mapping[str, Any]) -> str:
    code = exit_.get("code")
    sig = exit_.get("signal") or signal_name(code)
    return f"exit {code}" + (f" ({sig})" if sig else "")


def _exit_of(exits: Sequence[Mapping[str, Any]], pid: Any) -> Mapping[str, Any] | None:
    return next((e for e in exits if pid is not None and e.get("pid") == pid), None)


def judge(
    f: str,
    planned: Mapping[str, Any],
    done: Mapping[str, Any],
    exits: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    """The effect of action ``f`` (planned value ``planned``) that happened with value
    ``done``, given the ``sut-exit`` values recorded after it (in order)."""
    if isinstance(done.get("effect"), Mapping):
        return dict(done["effect"])
    if f == "kill-sut":
        return _killed(done.get("killed"), exits)
    if f == "arm-failpoint":
        return _crashed_at(str(done.get("fired") or planned.get("failpoint")), exits)
    if f == "fail-commit-reply":
        return _failed_after_commit(str(done.get("fired") or planned.get("failpoint")), exits)
    if f == "zombie-start":
        return _zombie_wrote([done.get("zombie")], exits)
    if f == "zombie-release":
        return _zombie_wrote([z.get("zombie") for z in done.get("released") or []], exits)
    return effect(None, "effect not observable: nothing recorded shows it")


def _killed(pid: Any, exits: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    exit_ = _exit_of(exits, pid)
    if exit_ is None:
        return effect(False, f"no exit of {pid} was recorded after the kill")
    if exit_.get("failpoint"):
        return effect(False, f"{pid} died at failpoint {exit_['failpoint']}, not by the kill")
    bit = signal_name(exit_.get("code")) == "SIGKILL"
    return effect(bit, f"{pid}: {_how(exit_)}")


def _crashed_at(point: str, exits: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    exit_ = next((e for e in exits if e.get("failpoint") == point), None)
    if exit_ is None:
        return effect(False, f"no incarnation's exit names {point}")
    who = f"incarnation {exit_.get('incarnation')}"
    if exit_matches("crash", exit_.get("code")):
        return effect(True, f"{who} died at {point}: {_how(exit_)}, as crash does")
    return effect(False, f"{who} named {point} but ended {_how(exit_)}, not by SIGKILL (crash)")


def _failed_after_commit(point: str, exits: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    for exit_ in exits:
        fired = exit_.get("fired") or {}
        if fired.get("failpoint") == point and fired.get("action") == "error":
            return effect(
                True,
                f"incarnation {exit_.get('incarnation')} logged {point} firing with error right "
                f"after its write returned (the write was applied; the caller saw a failure); "
                f"{_how(exit_)}",
            )
    return effect(False, f"no incarnation logged {point} firing with error")


def _zombie_wrote(zombies: list[Any], exits: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    seen = []
    for pid in zombies:
        exit_ = next((e for e in exits if e.get("zombie") and e.get("pid") == pid), None)
        if exit_ is None:
            seen.append(f"no exit of zombie {pid} recorded")
            continue
        last = exit_.get("last_event")
        if last in WRITE_EVENTS:
            return effect(
                True,
                f"zombie {pid} attempted a write after its successor started: last event "
                f"{last!r}, {_how(exit_)}",
            )
        seen.append(f"zombie {pid} ended without a write after its stall (last event {last!r})")
    return effect(False, "; ".join(seen) or "no zombie")
