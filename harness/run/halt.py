"""Halting a run early: one reason, set once, shared by the session, the supervisor and the
observer.

Whoever finds that waiting is pointless sets it — the supervisor when the job keeps exiting by
itself without progress (:mod:`sealcheck.harness.run.exits`), the observer when the output
holds what cannot be judged (:class:`sealcheck.systems.api.Unjudgeable`: a row without a key).
Setting it records ``harness info halted {"reason", …}`` (:data:`~sealcheck.rundir.history.
HALTED`) and prints ``halted: <reason>`` at once; from then on the warm-up stops waiting, the
fault phase ends (the actions left are recorded as skipped with the reason), the final phase
does not wait to catch up, and the run goes on to heal, stop, dump, export and judge as usual.
The states seen before are judged: a violation among them is INVALID (with the reason beside
it), otherwise the verdict is UNKNOWN with the reason (:meth:`sealcheck.rundir.history.History.
harness_failures`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from sealcheck.rundir.history import HALTED
from sealcheck.rundir.history_writer import HistoryWriter


class RunHalt:
    """Why the run stops early (None: it does not); the first :meth:`set` wins."""

    def __init__(self, history: HistoryWriter, say: Callable[[str], object]) -> None:
        self.history, self.say = history, say
        self._lock = threading.Lock()
        self._event = threading.Event()
        self._reason: str | None = None

    @property
    def reason(self) -> str | None:
        """The one line saying why the run was halted (None: it was not)."""
        return self._reason

    def is_set(self) -> bool:
        """Whether the run was halted (as soon as :attr:`reason` is set)."""
        return self._reason is not None

    def set(self, reason: str, **detail: Any) -> bool:
        """Halt the run for ``reason`` (one line), recording it with ``detail`` (plain JSON,
        e.g. the ``incarnation`` whose log tells more) and printing it; False, and nothing
        recorded, when it was halted already."""
        with self._lock:
            if self._reason is not None:
                return False
            self._reason = reason
            self.history.append("harness", "info", HALTED, {"reason": reason, **detail})
            self._event.set()  # waiters wake with the reason there to read
        self.say(f"halted: {reason}")
        return True

    def wait(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` for the run to be halted; whether it was."""
        return self._event.wait(timeout_s)
