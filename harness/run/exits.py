"""Why an incarnation of the system under test exited, as far as the harness can tell, and
what the supervisor does about it (:mod:`sealcheck.harness.run.supervisor`).

* **Explained** (:func:`by_itself` is False): the harness caused it — killed by a signal the
  harness sends (:data:`HARNESS_SIGNALS`: a kill, a crash point, a stop), a failpoint fired in
  it, a zombie given up, the supervisor stopping it — or it exited with one of the system's
  refusal codes (the final phase's own rule: "refuses to resume").
* **By itself**: anything else — the job's command returned, or it failed on its own (a
  Python exception, a JVM that aborted). Its ``sut-exit`` op gets ``by_itself``, ``lived_s``,
  ``error`` and ``log_tail`` (:func:`exit_fields`, the error from
  :mod:`sealcheck.harness.run.job_error`), and the run prints one line (:func:`exit_line`).
  One whose life overlapped the fault phase (a partition, a broker down, a zombie's fencing
  may end an incarnation without a trace the harness could read) is marked ``during_faults``:
  a fault may explain it, so it neither backs off nor counts towards giving up.
* **Back-off and giving up** (:class:`ExitStreak`): each exit by itself that no fault
  explains doubles the restart delay (0.5, 1, 2, 4 … s, at most :attr:`ExitStreak.cap_s`);
  an explained exit, or progress (the observer saw the output's uppers advance) since the last
  exit, starts over. After :attr:`ExitStreak.give_up_after` such exits in a row with no
  progress between them the run is halted (:mod:`sealcheck.harness.run.halt`) with
  :func:`give_up_reason`.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from sealcheck.harness.run.events import parse_event
from sealcheck.harness.run.job_error import job_error, recorded_tail
from sealcheck.nemeses.evidence import signal_name
from sealcheck.report.halted import how_it_ended
from sealcheck.rundir.names import sut_log

#: the signals the harness sends an incarnation (kill, crash point, power cut, stop, Ctrl-C): an
#: exit by another (SIGSEGV, SIGABRT of a JVM) is the job's own
HARNESS_SIGNALS = frozenset({"SIGKILL", "SIGTERM", "SIGINT"})
#: an incarnation that lived less than this exited "at once" (said so in the give-up line)
AT_ONCE_S = 5.0


def exit_evidence(code: int, log_text: str) -> dict[str, Any]:
    """What an exit shows of the faults that caused it (``sealcheck.nemeses.evidence``):
    ``signal`` (the signal's name, when killed by one), ``fired`` (the last failpoint event the
    incarnation logged: ``failpoint`` and ``action``, whatever the action) and ``last_event``
    (the last JSON event it logged, e.g. ``fenced``)."""
    out: dict[str, Any] = {}
    name = signal_name(code)
    if name is not None:
        out["signal"] = name
    for line in log_text.splitlines():
        event = parse_event(line)
        if event is None:
            continue
        out["last_event"] = event["event"]
        if event["event"] == "failpoint":  # what the history can hold: text, or null
            name, action = event.get("name"), event.get("action")
            out["fired"] = {
                "failpoint": name if isinstance(name, str) else None,
                "action": action if isinstance(action, str) else None,
            }
    return out


def by_itself(
    code: int,
    evidence: dict[str, Any],
    *,
    zombie: bool,
    stopping: bool,
    refusal_codes: frozenset[int] = frozenset(),
) -> bool:
    """Whether an exit with ``code`` and ``evidence`` (:func:`exit_evidence`) was the
    incarnation's own doing: no signal the harness sends, no failpoint
    fired, not a zombie, not stopped by the supervisor, not a refusal code."""
    if zombie or stopping or "fired" in evidence or code in refusal_codes:
        return False
    return evidence.get("signal") not in HARNESS_SIGNALS


def exit_fields(lived_s: float, log_text: str, during_faults: bool) -> dict[str, Any]:
    """What a ``sut-exit`` op adds for an exit by itself: ``by_itself``, ``lived_s``, ``error``
    (the job's own, or None when it printed nothing), ``log_tail`` and, when its life
    overlapped the fault phase, ``during_faults``."""
    out: dict[str, Any] = {
        "by_itself": True,
        "lived_s": round(lived_s, 2),
        "error": job_error(log_text),
        "log_tail": recorded_tail(log_text),
    }
    if during_faults:
        out["during_faults"] = True
    return out


def _said(error: str | None) -> str:
    return error if error is not None else "it printed nothing"


def exit_line(value: dict[str, Any]) -> str:
    """The line printed for an exit by itself (``value``: its ``sut-exit`` op's), in the words
    the report uses (:func:`sealcheck.report.halted.how_it_ended`), e.g. ``sut-4 exited by
    itself after 0.1 s (code 0), no fault explains it: it printed nothing``."""
    return f"sut-{value.get('incarnation')} exited {how_it_ended(value)}"


def give_up_reason(streak: list[dict[str, Any]]) -> str:
    """The one line of a run halted after the exits ``streak`` (their ``sut-exit`` values, in
    order): that the command exits at once or fails on its own, the job's last error and
    where its log is."""
    first, last = streak[0], streak[-1]
    n = len(streak)
    span = f"sut-{first.get('incarnation')} to sut-{last.get('incarnation')}"
    lived = max(float(v.get("lived_s") or 0.0) for v in streak)
    codes = sorted({str(v.get("code")) for v in streak})
    code = f"code {codes[0]}" if len(codes) == 1 else f"codes {', '.join(codes)}"
    if lived < AT_ONCE_S:
        how = (
            f"the job's command exits at once by itself: {n} incarnations in a row ({span}) "
            f"exited within {lived:.1f} s of starting ({code}), nothing sealed"
        )
    else:
        how = (
            f"the job exits by itself without progress: {n} incarnations in a row ({span}) "
            f"exited ({code}; the last after {float(last.get('lived_s') or 0):.1f} s), "
            "nothing sealed in between"
        )
    log = f"logs/{sut_log(int(last.get('incarnation') or 0))}"
    return f"{how}: {_said(last.get('error'))} (its log: {log})"


@dataclass
class ExitStreak:
    """Consecutive exits by itself that no fault explains, and the restart delay they earn.

    ``progress`` is a counter the caller reads from the observer (how often it saw the
    output's uppers advance): a value other than the one at the last exit means progress in
    between, and the streak starts over."""

    base_s: float = 0.5
    cap_s: float = 10.0
    give_up_after: int = 3
    #: the ``sut-exit`` values of the streak, oldest first
    exits: list[dict[str, Any]] = field(default_factory=list)
    #: the progress counter at the last exit
    mark: int = 0

    def _progressed(self, progress: int) -> None:
        """Start over when the output advanced since the last exit (``progress``: the
        counter now)."""
        if progress != self.mark:
            self.exits, self.mark = [], progress

    def explained(self, progress: int) -> None:
        """An explained exit (a kill, a fault): start over."""
        self.exits, self.mark = [], progress

    def alone(self, value: dict[str, Any], progress: int) -> None:
        """An exit by itself that no fault explains (``value``: its ``sut-exit`` op's)."""
        self._progressed(progress)
        self.exits.append(value)

    def delay_s(self) -> float:
        """How long to wait before the next start: :attr:`base_s`, doubled for each exit of
        the streak after the first, at most :attr:`cap_s`."""
        return min(self.cap_s, self.base_s * 2.0 ** max(0, len(self.exits) - 1))

    def exhausted(self, progress: int) -> bool:
        """Whether to give up: :attr:`give_up_after` exits in a row and no progress since the
        last (progress seen late starts the streak over)."""
        self._progressed(progress)
        return len(self.exits) >= self.give_up_after


class FaultSpans:
    """When the fault phase ran (``time.monotonic()``): the session marks its start and its
    end (after healing); an exit by itself of an incarnation that lived through it may be a
    fault's doing (``during_faults``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._spans: list[tuple[float, float | None]] = []

    def mark(self, on: bool) -> None:
        """The fault phase starts (``on``) or has ended."""
        with self._lock:
            if on:
                self._spans.append((time.monotonic(), None))
            elif self._spans and self._spans[-1][1] is None:
                self._spans[-1] = (self._spans[-1][0], time.monotonic())

    def overlap(self, started: float, ended: float) -> bool:
        """Whether ``[started, ended]`` overlaps the fault phase."""
        with self._lock:
            return any(a <= ended and (b is None or b >= started) for a, b in self._spans)
