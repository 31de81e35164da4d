"""The supervisor: keeps one incarnation of the system under test running, restarting it
whenever it exits, and records every start and exit (with its code and the failpoint that
fired) in the history, with what the exit shows of its cause
(:func:`~sealcheck.harness.run.exits.exit_evidence`), and the
events each incarnation logs (:mod:`sealcheck.harness.run.events`, read while it runs):
``sut-start``, ``sut-exit``, ``sut-event`` ops, described in :mod:`sealcheck.rundir.names`.

Nemeses act on the running incarnation through :class:`SupervisedNode` (the ``sut`` role:
kill, pause, resume — waiting for the next incarnation when between two; replace and release
for zombie writers) and arm failpoints through :class:`FailpointFile` (the failpoint contract
of ``sealcheck.systems.api``).

A *zombie* is an incarnation the supervisor was told to give up on while it still runs
(frozen): a new incarnation starts beside it at once, and the zombie's exit — when it is let go
on and, if the system fences correctly, stops with "fenced" — is recorded like any other, with
``"zombie": true``.

An incarnation that exits *by itself* — no signal the harness sent, no failpoint, not a zombie,
not stopped — gets ``by_itself``, ``lived_s``, its own ``error`` and its ``log_tail`` in its
``sut-exit`` op and one printed line; consecutive ones back off the restart, and after three in
a row with no progress the supervisor halts the run (:mod:`sealcheck.harness.run.exits`).

Incarnations are spawned from the supervisor's own thread, which lives until :meth:`stop`
(``PR_SET_PDEATHSIG`` fires when the forking thread exits; see :mod:`sealcheck.infra.procs`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sealcheck.core.nodes import Incarnation
from sealcheck.core.roles import SUT
from sealcheck.harness.run.events import EventPoller, EventTail
from sealcheck.harness.run.exits import (
    ExitStreak,
    FaultSpans,
    by_itself,
    exit_evidence,
    exit_fields,
    exit_line,
    give_up_reason,
)
from sealcheck.harness.run.halt import RunHalt
from sealcheck.rundir.history_writer import HistoryWriter
from sealcheck.rundir.names import SUT_EXIT, SUT_START, SUT_START_FAILED


class FailpointFile:
    """Failpoints armed through one file that every incarnation re-reads and removes as it
    fires (:class:`sealcheck.nemeses.api.Failpoints`)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)

    def arm(self, spec: str) -> dict[str, Any]:
        """Arm ``spec`` in the running incarnation (and the next, until it fires)."""
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(spec)
        tmp.replace(self.path)
        return {"armed": spec}

    def disarm(self) -> bool:
        """Remove the file; True if something was armed."""
        try:
            self.path.unlink()
        except FileNotFoundError:
            return False
        return True

    def armed(self) -> bool:
        """Whether the file is still there (an incarnation removes it as it fires)."""
        return self.path.exists()

    def spec(self) -> str | None:
        """What is armed now (None: nothing)."""
        try:
            return self.path.read_text().strip() or None
        except FileNotFoundError:
            return None


class Supervisor:
    """Runs ``make(incarnation)`` again and again until stopped — or, given the run's
    ``halt``, until the incarnations keep exiting by themselves without ``progress`` (a counter
    of the output's advances: :attr:`sealcheck.harness.run.observer.Observer.advances`). ``say``
    prints a line as it happens; ``refusal_codes`` are exit codes the system uses to say it
    cannot resume (not exits by itself: the final phase has its own rule for them)."""

    def __init__(
        self,
        make: Callable[[int], Incarnation],
        history: HistoryWriter,
        failpoints: FailpointFile,
        fired: Callable[[str], str | None],
        restart_delay_s: float = 0.5,
        event_poll_s: float = 1.0,
        *,
        halt: RunHalt | None = None,
        say: Callable[[str], object] = lambda line: None,
        progress: Callable[[], int] = lambda: 0,
        refusal_codes: frozenset[int] = frozenset(),
    ) -> None:
        self._make, self.history, self.failpoints = make, history, failpoints
        self._fired = fired
        self.restart_delay_s = restart_delay_s
        self.halt, self.say, self.progress = halt, say, progress
        self.refusal_codes = refusal_codes
        #: the exits by themselves in a row (the restart's back-off, when to give up)
        self.streak = ExitStreak(base_s=restart_delay_s)
        #: the fault phase (the session marks it): an exit by itself of an incarnation that
        #: lived through it may be a fault's doing (``during_faults``)
        self.faults = FaultSpans()
        #: seconds between two reads of a running incarnation's log for its events
        self.event_poll_s = event_poll_s
        self._linger_s = 120.0  # how long the loop outlives stop() waiting for exits
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self.current: Incarnation | None = None
        self.incarnations = 0
        #: when the current incarnation started (``time.monotonic()``)
        self.started_at = 0.0
        self._changed = threading.Event()  # the current incarnation exited or was given up
        self._exits: dict[int, int] = {}  # id(incarnation) -> exit code, once it exited
        self._exited: dict[int, threading.Event] = {}
        self._codes: list[int] = []  # exit codes of incarnations that were not zombies
        self.zombies: list[Incarnation] = []  # given up, not yet let go
        self._zombie_ids: set[int] = set()  # every incarnation ever given up
        #: every incarnation a nemesis stopped (an upgrade's SIGTERM), kept so that no later
        #: one is taken for it
        self._stopped: list[Incarnation] = []
        #: consecutive failures to start an incarnation (the backend refused, an image is
        #: missing) before the supervisor gives up and says why in :attr:`start_error`
        self.start_attempts = 3
        self.start_error: str | None = None

    def start(self) -> None:
        """Start the supervising thread (and with it the first incarnation)."""
        self._thread = threading.Thread(target=self._loop, name="supervisor", daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 30.0) -> int | None:
        """Stop restarting and stop the current incarnation and every zombie (SIGTERM, then
        SIGKILL)."""
        self._stopping.set()
        self._changed.set()
        code = None
        with self._lock:
            cur, zombies, self.zombies = self.current, list(self.zombies), []
        for zombie in zombies:
            zombie.resume()
            zombie.stop(timeout_s)
        if cur is not None:
            code = cur.stop(timeout_s)
        for proc in [*zombies, *([cur] if cur is not None else [])]:
            exited = self._exited.get(id(proc))
            if exited is not None:
                exited.wait(5)  # its exit is in the history before the history closes
        if self._thread is not None:
            self._thread.join(timeout_s + 5)
        return code

    def _loop(self) -> None:
        failures = 0
        while not self._stopping.is_set():
            n = self.incarnations
            try:
                proc = self._make(n)
                proc.start()
            except Exception as exc:  # recorded, tried again, then given up on (start_error)
                failures += 1
                why = f"{type(exc).__name__}: {exc}"[-2000:]
                value = {"incarnation": n, "attempt": failures, "error": why}
                self.history.append("supervisor", "info", SUT_START_FAILED, value)
                if failures >= self.start_attempts:
                    self.start_error = (
                        f"incarnation {n} of the system under test could not be started "
                        f"({failures} attempts); the last error: {why}"
                    )
                    break
                if self._stopping.wait(min(10.0, self.restart_delay_s * 4**failures)):
                    break
                continue
            failures = 0
            with self._lock:
                self.current, self.incarnations = proc, n + 1
                self.started_at = time.monotonic()
            self.history.append(
                "supervisor",
                "info",
                SUT_START,
                {"incarnation": n, "pid": proc.ident, "failpoints": self.failpoints.spec()},
            )
            self._exited[id(proc)] = exited = threading.Event()
            watcher = threading.Thread(
                target=self._watch,
                args=(n, proc, exited, self.started_at),
                name=f"exit-{n}",
                daemon=True,
            )
            watcher.start()
            self._changed.wait()  # it exited, was given up (a zombie now) or we stop
            self._changed.clear()
            with self._lock:
                delay = self.streak.delay_s()  # longer after each exit by itself in a row
            if self._stopping.wait(delay):
                break
            if self._gave_up():
                break
        self._changed.set()
        # Every incarnation was forked from this thread, and PR_SET_PDEATHSIG SIGKILLs it when
        # this thread ends: live until stop() has seen each one exit (SIGTERM, then SIGKILL).
        deadline = time.monotonic() + self._linger_s
        for exited in list(self._exited.values()):
            exited.wait(max(0.0, deadline - time.monotonic()))

    def _watch(self, n: int, proc: Incarnation, exited: threading.Event, started: float) -> None:
        events = EventPoller(EventTail(self.history, n), proc, self.event_poll_s)
        events.start()
        code = proc.wait_exit()
        ended = time.monotonic()
        self._exits[id(proc)] = code
        if id(proc) not in self._zombie_ids:
            self._codes.append(code)
        with self._lock:
            zombie = id(proc) in self._zombie_ids
            current = proc is self.current
        stopping = self._stopping.is_set() or any(p is proc for p in self._stopped)
        events.finish()  # every event it logged is in the history before its exit
        log = proc.log_text()
        evidence = exit_evidence(code, log)
        value: dict[str, Any] = {
            "incarnation": n,
            "pid": proc.ident,
            "code": code,
            "failpoint": fired if isinstance(fired := self._fired(log), str) else None,
            **({"zombie": True} if zombie else {}),
            **evidence,
        }
        alone = by_itself(
            code, evidence, zombie=zombie, stopping=stopping, refusal_codes=self.refusal_codes
        )
        if alone:
            value.update(exit_fields(ended - started, log, self.faults.overlap(started, ended)))
        self.history.append("supervisor", "info", SUT_EXIT, value)
        if alone:
            self.say(exit_line(value))
        if current:
            with self._lock:
                if alone and not value.get("during_faults"):
                    self.streak.alone(value, self.progress())
                else:
                    self.streak.explained(self.progress())
        exited.set()
        if current:
            self._changed.set()

    def _gave_up(self) -> bool:
        """Halt the run when the exits by themselves in a row are too many, with no progress
        since the last (checked after its restart delay: the observer samples 4 times a
        second); whether it did."""
        if self.halt is None:
            return False
        with self._lock:
            if not self.streak.exhausted(self.progress()):
                return False
            streak = list(self.streak.exits)
        last = streak[-1].get("incarnation")
        self.halt.set(give_up_reason(streak), by="supervisor", incarnation=last)
        return True

    def refusing(self, codes: frozenset[int], n: int) -> str:
        """Non-empty (the codes, as text) when the last ``n`` exits of current incarnations
        all had one of ``codes`` (the system says it cannot go on: waiting is pointless)."""
        last = self._codes[-n:]
        if len(last) < n or not codes or not all(c in codes for c in last):
            return ""
        return "exit codes " + ", ".join(map(str, last))

    def stopping(self, proc: Incarnation) -> None:
        """``proc`` is being stopped at the harness's request (an upgrade's SIGTERM): however
        it exits — 0 once it has finished its batch — it did not exit by itself."""
        with self._lock:
            self._stopped.append(proc)

    def give_up(self, proc: Incarnation) -> None:
        """Treat ``proc`` (frozen by the caller) as a zombie and start the next incarnation
        beside it."""
        with self._lock:
            if proc is not self.current:
                return
            self.zombies.append(proc)
            self._zombie_ids.add(id(proc))
            self.current = None
        self._changed.set()

    def let_go(self, wait_s: float) -> list[dict[str, Any]]:
        """Thaw every zombie and wait up to ``wait_s`` for it to exit; kill one that did not.
        Per zombie: its pid, exit code and whether it had to be killed."""
        with self._lock:
            zombies, self.zombies = list(self.zombies), []
        out = []
        for zombie in zombies:
            zombie.resume()
            exited = self._exited[id(zombie)]
            killed = not exited.wait(wait_s)
            if killed:
                zombie.kill()
                exited.wait(wait_s)
            out.append(
                {"zombie": zombie.ident, "code": self._exits.get(id(zombie)), "killed": killed}
            )
        return out

    def running(self) -> Incarnation | None:
        """The current incarnation if it is alive."""
        with self._lock:
            cur = self.current
        return cur if cur is not None and cur.alive else None

    def wait_running(self, timeout_s: float) -> Incarnation | None:
        """Wait until an incarnation is alive; None on timeout."""
        deadline = time.monotonic() + timeout_s
        while (cur := self.running()) is None and time.monotonic() < deadline:
            time.sleep(0.05)
        return cur


class SupervisedNode:
    """The ``sut`` role (:data:`sealcheck.core.roles.SUT`) as one node: whatever incarnation
    runs now. Kill and pause wait up to ``wait_s`` for the next incarnation when between two,
    so the fault still happens; starting is the supervisor's job (it restarts every incarnation
    that exits)."""

    name = SUT.name

    def __init__(self, supervisor: Supervisor, wait_s: float = 15.0) -> None:
        self.supervisor, self.wait_s = supervisor, wait_s
        self._paused: Incarnation | None = None
        self._acted_on: Incarnation | None = None  # the last one paused or resumed
        #: the last incarnation :meth:`kill` killed (its log and whether it is gone yet stay
        #: readable after the supervisor started the next one)
        self.last_killed: Incarnation | None = None

    @property
    def alive(self) -> bool:
        """Whether an incarnation runs."""
        return self.supervisor.running() is not None

    @property
    def ident(self) -> int | str | None:
        """The running incarnation's (None: none runs)."""
        cur = self.supervisor.running()
        return cur.ident if cur is not None else None

    @property
    def frozen(self) -> bool:
        """Whether the incarnation this node last froze or thawed is frozen now."""
        return self._acted_on is not None and self._acted_on.frozen

    def log_text(self) -> str:
        """The running incarnation's log (empty: none runs)."""
        cur = self.supervisor.running()
        return cur.log_text() if cur is not None else ""

    def start(self) -> None:
        """Nothing: the supervisor restarts incarnations."""
        return None

    def kill(self) -> int | str | None:
        """SIGKILL the running incarnation (driver and JVM)."""
        cur = self.supervisor.wait_running(self.wait_s)
        if cur is None:
            return None
        self.last_killed = cur
        return cur.kill()

    def terminate(self, timeout_s: float = 30.0) -> tuple[int | str, int | None] | None:
        """SIGTERM the running incarnation, SIGKILL it after ``timeout_s``, and return once it
        has exited (the supervisor starts the next); its id and exit code."""
        cur = self.supervisor.wait_running(self.wait_s)
        if cur is None or cur.ident is None:
            return None
        self.last_killed = cur
        ident = cur.ident
        self.supervisor.stopping(cur)
        return ident, cur.stop(timeout_s)

    def pause(self) -> int | str | None:
        """Freeze the running incarnation; returns once it is frozen."""
        cur = self.supervisor.wait_running(self.wait_s)
        if cur is None:
            return None
        self._paused = self._acted_on = cur
        return cur.pause()

    def resume(self) -> int | str | None:
        """Thaw the incarnation this node froze, if it still runs frozen."""
        cur, self._paused = self._paused, None
        self._acted_on = cur or self._acted_on
        return cur.resume() if cur is not None else None

    def replace(self) -> int | str | None:
        """Give up the running incarnation (stalled by the caller, e.g. at a failpoint) and
        start a new one beside it: the old one is now a zombie, still holding whatever it had
        in flight."""
        cur = self.supervisor.running()
        if cur is None:
            return None
        self.supervisor.give_up(cur)
        return cur.ident

    def release(self, wait_s: float = 20.0) -> list[dict[str, Any]]:
        """Let every zombie go on, wait for it to exit (killing it after ``wait_s``)."""
        return self.supervisor.let_go(wait_s)
