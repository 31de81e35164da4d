"""The supervisor: keeps one pipeline incarnation running, restarting it whenever it exits,
and records every start and exit (with its code) in the history. The nemeses act on the
pipeline through it (kill, pause, resume, arm a failpoint).

Incarnations are spawned from the supervisor's own thread, which lives until :meth:`stop`
(``PR_SET_PDEATHSIG`` fires when the forking thread exits; see :mod:`harness.procs`).
"""

from __future__ import annotations

import re
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness import procs
from harness.history import HistoryWriter
from harness.pipeline_proc import PipelineProcess

_FIRED = re.compile(r"^failpoint (?P<name>[a-z_.]+): crash", re.MULTILINE)


class Supervisor:
    """Runs ``make(incarnation)`` again and again until stopped."""

    def __init__(
        self,
        make: Callable[[int], PipelineProcess],
        history: HistoryWriter,
        failpoint_file: Path,
        restart_delay_s: float = 0.5,
    ) -> None:
        self._make, self.history, self.failpoint_file = make, history, failpoint_file
        self.restart_delay_s = restart_delay_s
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self.current: PipelineProcess | None = None
        self.incarnations = 0
        self.paused = False
        #: ``(incarnation, exit code, failpoint that fired or None)`` per exit
        self.exits: list[tuple[int, int, str | None]] = []

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
        if cur is not None and cur.proc is not None:
            code = procs.terminate(cur.proc, timeout_s)
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
            assert proc.proc is not None
            armed = self.failpoint_file.read_text().strip() if self.failpoint_file.exists() else ""
            self.history.append(
                "supervisor",
                "info",
                "pipeline-start",
                {"incarnation": n, "pid": proc.proc.pid, "failpoints": armed or None},
            )
            code = proc.proc.wait()
            fired = [m["name"] for m in _FIRED.finditer(proc.log_text())]
            self.exits.append((n, code, fired[-1] if fired else None))
            self.history.append(
                "supervisor",
                "info",
                "pipeline-exit",
                {
                    "incarnation": n,
                    "pid": proc.proc.pid,
                    "code": code,
                    "failpoint": fired[-1] if fired else None,
                },
            )
            if self._stopping.wait(self.restart_delay_s):
                break

    # -- what the nemeses do ------------------------------------------------------------
    def _proc(self) -> PipelineProcess | None:
        with self._lock:
            cur = self.current
        return cur if cur is not None and cur.running else None

    def kill(self) -> dict[str, Any]:
        """SIGKILL the current incarnation's process group (driver and JVM)."""
        cur = self._proc()
        if cur is None or cur.proc is None:
            return {"killed": None}
        procs.signal_group(cur.proc, signal.SIGKILL)
        return {"killed": cur.proc.pid}

    def pause(self) -> dict[str, Any]:
        """SIGSTOP the current incarnation (waits until the kernel reports it stopped)."""
        cur = self._proc()
        if cur is None or cur.proc is None:
            return {"paused": None}
        procs.pause(cur.proc)
        self.paused = True
        return {"paused": cur.proc.pid}

    def resume(self) -> dict[str, Any]:
        """SIGCONT whatever incarnation is current (a no-op when none is stopped)."""
        cur = self._proc()
        was, self.paused = self.paused, False
        if cur is None or cur.proc is None:
            return {"resumed": None}
        procs.resume(cur.proc)
        return {"resumed": cur.proc.pid if was else None}

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

    def wait_running(self, timeout_s: float) -> bool:
        """Wait until an incarnation is alive; False on timeout."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._proc() is not None:
                return True
            time.sleep(0.05)
        return False
