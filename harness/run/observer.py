"""The observer: samples the system under test's uppers into the history while the run goes on.

It asks the deployment (:meth:`sealcheck.systems.api.Deployment.uppers`) every ``interval_s`` and
writes an
``observer uppers`` op whenever they changed, and at least every ``heartbeat_s``; the
``seal_monotonic`` and ``frontiers`` checkers and the report's timeline read these ops.

When the deployment can (:class:`sealcheck.systems.api.CapturesSteps`), it also captures every
newly sealed
step right after it sees an upper advance — in one read, before compaction can merge it (the
deployment may hold compaction back at what was captured) — into
``captures.arrows`` with one ``observer info captured`` op each (:mod:`sealcheck.rundir.captures`),
so
that the checkers judge every sealed step one by one.

An output that holds what cannot be judged says so by raising
:class:`~sealcheck.systems.api.Unjudgeable` (a row without a key): the observer halts the run
with its line (:class:`~sealcheck.harness.run.halt.RunHalt`) at the first one and records no
uppers after it. :attr:`Observer.advances` counts the samples whose uppers moved forward: the
supervisor's measure of progress (:mod:`sealcheck.harness.run.exits`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from sealcheck.harness.run.halt import RunHalt
from sealcheck.rundir.captures import CAPTURED_OP, Capture, CaptureWriter
from sealcheck.rundir.history_writer import HistoryWriter
from sealcheck.systems.api import Unjudgeable


class Observer:
    """A thread writing the store's uppers into the history when they move."""

    def __init__(
        self,
        read: Callable[[], dict[str, int] | None],
        history: HistoryWriter,
        interval_s: float = 0.25,
        heartbeat_s: float = 5.0,
        capture: Callable[[dict[str, int]], Capture | None] | None = None,
        captures: CaptureWriter | None = None,
        halt: RunHalt | None = None,
    ) -> None:
        self.read, self.history = read, history
        self.capture, self.captures = capture, captures
        #: halted with the output's line when it raises :class:`Unjudgeable`
        self.halt = halt
        #: how many samples saw an upper move past the highest seen before (progress)
        self.advances = 0
        self._highest: dict[str, int] = {}
        self._unjudgeable = False  # the output said so: nothing more is read
        #: per collection, every step below it was captured (or recorded as missed)
        self.captured: dict[str, int] = {}
        self.interval_s, self.heartbeat_s = interval_s, heartbeat_s
        self.last: dict[str, int] = {}
        self._written = time.monotonic()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._stopped = False
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start sampling."""
        self._thread = threading.Thread(target=self._run, name="observer", daemon=True)
        self._thread.start()

    def sample(self) -> dict[str, int] | None:
        """Read once and record if changed (or the heartbeat is due); None, and the run halted,
        once the output says it cannot be judged."""
        if self._unjudgeable:
            return None
        try:
            uppers = self.read()
        except Unjudgeable as exc:
            self._unjudged(exc)
            return None
        if uppers is not None and any(u > self._highest.get(c, 0) for c, u in uppers.items()):
            self.advances += 1
            self._highest = {c: max(u, self._highest.get(c, 0)) for c, u in uppers.items()}
        due = time.monotonic() - self._written > self.heartbeat_s
        if uppers is not None and (uppers != self.last or due):
            self.history.append("observer", "info", "uppers", uppers)
            self.last = uppers
            self._written = time.monotonic()
        if uppers is not None and any(u > self.captured.get(c, 0) for c, u in uppers.items()):
            self._capture()
        return uppers

    def _capture(self) -> None:
        """Capture the steps sealed since the last capture (when the deployment can)."""
        if self.capture is None or self.captures is None:
            return
        try:
            got = self.capture(dict(self.captured))
        except Unjudgeable as exc:
            self._unjudged(exc)
            return
        if got is None or not (got.ranges or got.missed):
            return
        if got.ranges:
            self.captures.write(got)
        self.history.append("observer", "info", CAPTURED_OP, got.op_value())
        for c, (_, hi) in [*got.missed.items(), *got.ranges.items()]:
            self.captured[c] = max(self.captured.get(c, 0), hi)

    def _unjudged(self, exc: Unjudgeable) -> None:
        """The output cannot be judged from here on: halt the run with its line."""
        self._unjudgeable = True
        if self.halt is not None:
            self.halt.set(str(exc), by="observer")

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.sample()

    def stop(self) -> None:
        """Stop sampling, with one last sample (and capture) once the thread has ended. Only
        the first call does anything: teardown calls it again after the history's final op,
        which nothing may follow."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
        self._stop.set()
        if self._thread is not None:
            self._thread.join(30)  # a capture under way finishes (its reads time out sooner)
            if self._thread.is_alive():  # stuck: never two samplers on one writer
                return
        self.sample()
        if self.captures is not None:
            self.captures.close()
