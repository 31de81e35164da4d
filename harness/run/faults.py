"""The fault phase of a run: the planned schedule, executed in real time.

Every action's ops carry its index in the schedule (``action``) and its ``outcome``; an action
left ``pending`` (an armed failpoint) is settled when the next action is due and when the
fault phase ends, so each planned fault happens or says why not. A run halted early
(:class:`~sealcheck.harness.run.halt.RunHalt`) ends the phase at once: pending actions are
settled, and every action not invoked yet is recorded as skipped with the halt's reason. The
session (:mod:`sealcheck.harness.run.session`) runs it between the warm-up and the final phase.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sealcheck.harness.run.halt import RunHalt
from sealcheck.harness.run.progress import Display
from sealcheck.nemeses import Action, Nemesis
from sealcheck.rundir.history_writer import HistoryWriter


@dataclass
class FaultPhase:
    """The schedule of one run against ``target`` (a :class:`sealcheck.nemeses.Target`);
    ``status`` shows the progress (seconds into the phase) between actions."""

    schedule: list[Action]
    nemeses: Mapping[str, Nemesis]
    target: Any
    duration_s: float
    history: HistoryWriter
    display: Display
    status: Callable[[float], None] = field(default=lambda elapsed: None)
    #: the run's halt: once set, the phase ends early
    halt: RunHalt | None = None

    def skip_all(self, why: str) -> None:
        """Record that no planned action happened, and why (nothing could be started)."""
        for i, action in enumerate(self.schedule):
            self._outcome(i, action, {"outcome": "skipped", "why": why})

    def run(self) -> None:
        """Run the schedule in real time until ``duration_s``, printing each step."""
        self._start = time.monotonic()
        # the schedule's zero on the history's clock (the report draws planned times from it)
        self.history.append("harness", "info", "faults-start", {"duration_s": self.duration_s})
        self._pending: list[tuple[int, Action, float]] = []
        todo = list(enumerate(self.schedule))
        self.display.update(phase="workload and faults")
        while (elapsed := time.monotonic() - self._start) < self.duration_s and not self._halted():
            # due actions run back to back when the runner is behind, but not past the end
            while todo and todo[0][1].at_s <= elapsed and not self._over():
                self._settle()  # may wait for a pending fault to have had its chance
                if self._over():
                    break
                self._invoke(*todo.pop(0))
            self.status(elapsed)
            if self.halt is not None:
                self.halt.wait(0.1)
            else:
                time.sleep(0.1)
        self._settle()
        why = "the fault phase ended first (the runner was behind its schedule)"
        if self.halt is not None and self.halt.reason is not None:
            halted = f"the run was halted: {self.halt.reason}"
            self.display.log(f"faults: {len(todo)} actions left are skipped (halted)")
            for i, action in todo:  # every action left: the run ended early
                self._outcome(i, action, {"outcome": "skipped", "why": halted})
            return
        for i, action in todo:  # planned inside the fault phase, never reached: say so
            if action.at_s < self.duration_s:
                self._outcome(i, action, {"outcome": "skipped", "why": why})

    def _invoke(self, i: int, action: Action) -> None:
        """Invoke action ``i``; record and show what it did (pending: settled later)."""
        value = {**action.value, "action": i}
        self.history.append("nemesis", "invoke", action.f, value)
        try:
            done = self.nemeses[action.nemesis].invoke(action, self.target)
            kind = "info"
        except Exception as exc:  # recorded; the run goes on
            err = f"{type(exc).__name__}: {exc}"
            done, kind = {"error": err, "outcome": "failed", "why": err}, "fail"
        done.setdefault("outcome", "happened")
        self.history.append("nemesis", kind, action.f, {**value, **done})
        if done["outcome"] == "pending":
            self._pending.append((i, action, time.monotonic() - self._start))
        line = f"{action.nemesis}: {action.f} {action.value or ''} -> {done}"
        self.display.log(line)
        self.display.update(last_action=line)

    def _settle(self) -> None:
        """Resolve every pending action: whether it happened after all."""
        while self._pending:
            i, action, at = self._pending.pop(0)
            waited = time.monotonic() - self._start - at  # an invoke before may have been slow
            try:
                done = self.nemeses[action.nemesis].resolve(action, self.target, waited)
            except Exception as exc:  # recorded; the run goes on
                done = {"outcome": "failed", "why": f"{type(exc).__name__}: {exc}"}
            self._outcome(i, action, done)
            self.display.log(f"{action.nemesis}: {action.f} #{i} outcome -> {done}")

    def _outcome(self, i: int, action: Action, done: Mapping[str, Any]) -> None:
        self.history.append("nemesis", "info", "outcome", {"action": i, "f": action.f, **done})

    def _over(self) -> bool:
        """Whether the fault phase has run its duration, or the run was halted."""
        return time.monotonic() - self._start >= self.duration_s or self._halted()

    def _halted(self) -> bool:
        return self.halt is not None and self.halt.is_set()
