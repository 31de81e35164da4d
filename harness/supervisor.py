"""The supervisor: keeps one pipeline incarnation running, restarting it whenever it exits,
and records every start and exit (with its code) in the history. The nemeses act on the
pipeline through it (kill, pause, resume, arm a failpoint).

Incarnations are spawned from the supervisor's own thread, which lives until :meth:`stop`
(``PR_SET_PDEATHSIG`` fires when the forking thread exits; see :mod:`harness.procs`).
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from harness.history import HistoryWriter


class Incarnation(Protocol):
    """One run of the pipeline: a local process group or a container."""

    @property
    def pid(self) -> int | None:
        """The process id on the host (None before start)."""

    @property
    def running(self) -> bool:
        """Whether it is alive (possibly paused)."""

    def start(self) -> None:
        """Start it."""

    def wait_exit(self) -> int:
        """Block until it exits; the exit code (negative: killed by that signal)."""

    def kill(self) -> None:
        """SIGKILL it."""

    def pause(self) -> None:
        """Freeze it; return once it is frozen."""

    def resume(self) -> None:
        """Thaw it."""

    def stop(self, timeout_s: float = 30.0) -> int | None:
        """Stop it cleanly (SIGTERM), forcibly after ``timeout_s``."""

    def log_text(self) -> str:
        """Everything it logged so far."""


_FIRED = re.compile(r"^failpoint (?P<name>[a-z_.]+): crash", re.MULTILINE)


class Supervisor:
    """Runs ``make(incarnation)`` again and again until stopped."""

    def __init__(
        self,
        make: Callable[[int], Incarnation],
        history: HistoryWriter,
        failpoint_file: Path,
        restart_delay_s: float = 0.5,
        on_start: Callable[[Incarnation], None] | None = None,
    ) -> None:
        self._make, self.history, self.failpoint_file = make, history, failpoint_file
        self.restart_delay_s = restart_delay_s
        self._on_start = on_start
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self.current: Incarnation | None = None
        self.incarnations = 0
        self.paused = False

    # -- lifecycle ----------------------------------------------------------------------
    def start(self) -> None:
        """Start the supervising thread (and with it the first incarnation)."""
        self._thread = threading.Thread(target=self._loop, name="supervisor", daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 30.0) -> int | None:
        """Stop restarting and stop the current incarnation (SIGTERM, then SIGKILL)."""
        self._stopping.set()
        code = None
        with self._lock:
            cur = self.current
        if cur is not None:
            code = cur.stop(timeout_s)
        if self._thread is not None:
            self._thread.join(timeout_s + 5)
        return code

    def _loop(self) -> None:
        while not self._stopping.is_set():
            n = self.incarnations
            proc = self._make(n)
            proc.start()
            with self._lock:
                self.current, self.incarnations, self.paused = proc, n + 1, False
            if self._on_start is not None:
                try:
                    self._on_start(proc)
                except Exception as exc:  # recorded; the incarnation runs anyway
                    self.history.append("supervisor", "info", "on-start-failed", str(exc))
            armed = self.failpoint_file.read_text().strip() if self.failpoint_file.exists() else ""
            self.history.append(
                "supervisor",
                "info",
                "pipeline-start",
                {"incarnation": n, "pid": proc.pid, "failpoints": armed or None},
            )
            code = proc.wait_exit()
            fired = [m["name"] for m in _FIRED.finditer(proc.log_text())]
            self.history.append(
                "supervisor",
                "info",
                "pipeline-exit",
                {
                    "incarnation": n,
                    "pid": proc.pid,
                    "code": code,
                    "failpoint": fired[-1] if fired else None,
                },
            )
            if self._stopping.wait(self.restart_delay_s):
                break

    # -- what the nemeses do ------------------------------------------------------------
    def _proc(self) -> Incarnation | None:
        with self._lock:
            cur = self.current
        return cur if cur is not None and cur.running else None

    def current_pid(self) -> int | None:
        """The running incarnation's pid on the host (None if none runs)."""
        cur = self._proc()
        return cur.pid if cur is not None else None

    def kill(self, wait_s: float = 15.0) -> dict[str, Any]:
        """SIGKILL the current incarnation's process group (driver and JVM); between two
        incarnations, wait up to ``wait_s`` for the next one so the fault still happens."""
        self.wait_running(wait_s)
        cur = self._proc()
        if cur is None:
            return {"killed": None}
        pid = cur.pid
        cur.kill()
        return {"killed": pid}

    def pause(self, wait_s: float = 15.0) -> dict[str, Any]:
        """SIGSTOP the current incarnation (waits until the kernel reports it stopped);
        between two incarnations, wait up to ``wait_s`` for the next one."""
        self.wait_running(wait_s)
        cur = self._proc()
        if cur is None:
            return {"paused": None}
        cur.pause()
        self.paused = True
        return {"paused": cur.pid}

    def resume(self) -> dict[str, Any]:
        """SIGCONT whatever incarnation is current (a no-op when none is stopped)."""
        cur = self._proc()
        was, self.paused = self.paused, False
        if cur is None:
            return {"resumed": None}
        cur.resume()
        return {"resumed": cur.pid if was else None}

    def arm_failpoint(self, spec: str) -> dict[str, Any]:
        """Arm ``spec`` in the running incarnation (and the next, until it fires)."""
        tmp = self.failpoint_file.with_suffix(".tmp")
        tmp.write_text(spec)
        tmp.replace(self.failpoint_file)
        return {"armed": spec}

    def disarm_failpoints(self) -> bool:
        """Remove the failpoint file; True if something was armed."""
        try:
            self.failpoint_file.unlink()
        except FileNotFoundError:
            return False
        return True

    def failpoint_armed(self) -> bool:
        """Whether the failpoint file is still there (the pipeline removes it as it fires)."""
        return self.failpoint_file.exists()

    def wait_running(self, timeout_s: float) -> bool:
        """Wait until an incarnation is alive; False on timeout."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._proc() is not None:
                return True
            time.sleep(0.05)
        return False


class SupervisedPipeline:
    """The pipeline half of a nemesis target (shared by both backends): every fault goes
    through the :class:`Supervisor`, which knows the current incarnation."""

    supervisor: Supervisor

    def pipeline_kill(self) -> dict[str, Any]:
        """SIGKILL the pipeline incarnation."""
        return self.supervisor.kill()

    def pipeline_pause(self) -> dict[str, Any]:
        """Freeze the pipeline incarnation."""
        return self.supervisor.pause()

    def pipeline_resume(self) -> dict[str, Any]:
        """Thaw the pipeline incarnation."""
        return self.supervisor.resume()

    def arm_failpoint(self, spec: str) -> dict[str, Any]:
        """Arm a failpoint in the running pipeline (and later ones until it fires)."""
        return self.supervisor.arm_failpoint(spec)

    def disarm_failpoints(self) -> bool:
        """Disarm failpoints that have not fired."""
        return self.supervisor.disarm_failpoints()

    def failpoint_armed(self) -> bool:
        """Whether an armed failpoint has yet to fire."""
        return self.supervisor.failpoint_armed()
