"""The pipeline as a child process of the harness, and how far it has sealed.

:class:`PipelineProcess` starts ``python -m pipeline`` (one *incarnation*) with optional
failpoints, logging to a file; :func:`progress` reads the store to tell whether the pipeline
has sealed the whole log.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from harness import procs


@dataclass
class PipelineProcess:
    """One pipeline incarnation: ``start``, then ``wait``/``terminate``/``kill``."""

    bootstrap: str
    topic: str
    store: str
    log_path: Path
    max_records_per_step: int = 10_000
    extra_args: tuple[str, ...] = ()
    failpoints: str = ""
    #: a file the running process re-reads for failpoints to arm (the failpoint nemesis)
    failpoint_file: str = ""
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def argv(self) -> list[str]:
        """The command line of this incarnation."""
        return [
            sys.executable,
            "-m",
            "pipeline",
            "--bootstrap",
            self.bootstrap,
            "--topic",
            self.topic,
            "--store",
            self.store,
            "--max-records-per-step",
            str(self.max_records_per_step),
            *self.extra_args,
        ]

    def start(self) -> None:
        """Spawn the process (its own session; dies with the harness)."""
        env = dict(os.environ)
        env.pop("SEALCHECK_FAILPOINTS", None)
        if self.failpoints:
            env["SEALCHECK_FAILPOINTS"] = self.failpoints
        env.pop("SEALCHECK_FAILPOINTS_FILE", None)
        if self.failpoint_file:
            env["SEALCHECK_FAILPOINTS_FILE"] = self.failpoint_file
        env["PYTHONUNBUFFERED"] = "1"
        self.proc = procs.spawn(self.argv(), self.log_path, env=env)

    @property
    def running(self) -> bool:
        """Whether the process is alive."""
        return self.proc is not None and self.proc.poll() is None

    def wait_started(self, timeout_s: float = 120.0) -> None:
        """Wait until this incarnation has rehydrated and started its loop."""
        deadline = time.monotonic() + timeout_s
        while '"event": "started"' not in self.log_text():
            if not self.running:
                raise RuntimeError(
                    f"pipeline exited with {self.proc and self.proc.returncode} before starting:\n"
                    + "\n".join(self.log_text().splitlines()[-15:])
                )
            if time.monotonic() > deadline:
                raise TimeoutError(f"pipeline not started after {timeout_s:.0f}s")
            time.sleep(0.1)

    def wait(self, timeout_s: float) -> int:
        """Wait for exit; the exit code (negative: killed by that signal)."""
        assert self.proc is not None, "start() first"
        return self.proc.wait(timeout=timeout_s)

    def terminate(self, timeout_s: float = 30.0) -> int:
        """SIGTERM (clean stop between steps), SIGKILL after ``timeout_s``."""
        assert self.proc is not None, "start() first"
        return procs.terminate(self.proc, timeout_s)

    @property
    def pid(self) -> int | None:
        """The process id (None before start)."""
        return self.proc.pid if self.proc is not None else None

    def wait_exit(self) -> int:
        """Block until the incarnation exits; its exit code (negative: killed by a signal)."""
        assert self.proc is not None, "start() first"
        return self.proc.wait()

    def kill(self) -> None:
        """SIGKILL the whole process group (driver and its JVM)."""
        if self.proc is not None:
            procs.signal_group(self.proc, signal.SIGKILL)

    def pause(self) -> None:
        """SIGSTOP the group; returns once the kernel reports it stopped."""
        if self.proc is not None:
            procs.pause(self.proc)

    def resume(self) -> None:
        """SIGCONT the group."""
        if self.proc is not None:
            procs.resume(self.proc)

    def stop(self, timeout_s: float = 30.0) -> int | None:
        """SIGTERM, then SIGKILL after ``timeout_s``; the exit code."""
        return procs.terminate(self.proc, timeout_s) if self.proc is not None else None

    def log_text(self) -> str:
        """Everything this incarnation logged so far."""
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""


@dataclass(frozen=True)
class Progress:
    """How far the store has sealed: uppers and the bindings of the last sealed step."""

    uppers: dict[str, int]
    bound: dict[int, int]

    def covers(self, log_end: dict[int, int]) -> bool:
        """True when data is sealed through a step whose bindings reach ``log_end``."""
        t = self.uppers.get("data", 0)
        wanted = {p: o for p, o in log_end.items() if o > 0}
        return t > 0 and all(self.bound.get(p, 0) >= o for p, o in wanted.items())


def progress(store: str) -> Progress:
    """Read the store's uppers and last sealed bindings (opens and closes it)."""
    from pipeline.loop import decode_bindings
    from pipeline.persist import open_store

    s = open_store(store)
    try:
        uppers = s.uppers()
        t = uppers.get("data", 0)
        bound = decode_bindings(s.snapshot("bindings", t - 1)) if t > 0 else {}
        return Progress(uppers, bound)
    finally:
        s.close()


def wait_caught_up(
    store: str, log_end: dict[int, int], timeout_s: float, proc: PipelineProcess | None = None
) -> Progress:
    """Poll until the store covers ``log_end``; TimeoutError (with the log tail) otherwise."""
    deadline = time.monotonic() + timeout_s
    last = Progress({}, {})
    while time.monotonic() < deadline:
        if Path(store.removeprefix("sqlite://")).exists():
            last = progress(store)
            if last.covers(log_end):
                return last
        if proc is not None and proc.proc is not None and not proc.running:
            raise RuntimeError(
                f"pipeline exited with {proc.proc.returncode} before catching up:\n"
                + "\n".join(proc.log_text().splitlines()[-15:])
            )
        time.sleep(0.25)
    tail = "\n".join(proc.log_text().splitlines()[-15:]) if proc else ""
    raise TimeoutError(
        f"pipeline did not seal the log end {log_end} within {timeout_s:.0f}s "
        f"(sealed: {last.uppers}, bound {last.bound})\n{tail}"
    )
