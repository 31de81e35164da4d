"""Child processes the harness owns: started in their own session, never outliving it.

Every server the harness starts (Kafka brokers, incarnations of the system under test) goes
through :func:`spawn`, which

* puts the child in a new session (so signals reach the whole process group),
* asks the kernel to SIGKILL the child when the harness process dies
  (``PR_SET_PDEATHSIG``), so even a ``kill -9`` of the harness leaves no orphan,
* sends stdout and stderr to a log file.

``PR_SET_PDEATHSIG`` fires when the *thread* that forked exits, so spawn from a thread
that lives as long as the child (the main thread, or the supervisor's own thread).

Ownership: every process a run starts inherits ``SEALCHECK_RUN`` (the run directory) and
``SEALCHECK_OWNER`` (:func:`owner_token` of the harness), so :mod:`sealcheck.infra.cleanup` can
find what
a dead harness left behind.

A run with ``--leave-running`` spawns *detached* children (:func:`mark_children`): their own
session still, but no ``PR_SET_PDEATHSIG``, so what the harness leaves running outlives it; their
owner is not the harness but its keeper (:mod:`sealcheck.infra.keeper`), which stays while the run
is left
running and kills them if the harness dies any other way. Such a run stops everything itself on
every other way out, too (teardown, then :func:`sealcheck.infra.cleanup.end_owned`).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

_PR_SET_PDEATHSIG = 1

RUN_ENV = "SEALCHECK_RUN"
OWNER_ENV = "SEALCHECK_OWNER"

_detached = False  # set by mark_children: spawn children that outlive the harness
_owner: str | None = None  # set by mark_children: the owner token children carry


def _start_time(pid: int) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]  # field 22: start time in clock ticks


def start_time(pid: int) -> str | None:
    """When ``pid`` started (clock ticks since boot, as text; None: no such process); with
    the pid it names one process for good, as :func:`owner_token` does."""
    return _start_time(pid)


def owner_token(pid: int | None = None) -> str:
    """``<pid>:<start time>`` of a process (this one by default)."""
    pid = os.getpid() if pid is None else pid
    return f"{pid}:{_start_time(pid)}"


def mark_children(run_dir: Path, detached: bool = False) -> None:
    """Tag every process this harness starts from now on as belonging to ``run_dir``; with
    ``detached``, they survive the harness (no ``PR_SET_PDEATHSIG``; ``--leave-running``) and
    are owned by a keeper started now (:mod:`sealcheck.infra.keeper`) instead of the harness."""
    global _detached, _owner
    os.environ[RUN_ENV] = str(run_dir.absolute())  # its processes may start elsewhere
    os.environ.pop(OWNER_ENV, None)  # the keeper carries no owner: no cleanup takes it
    _detached = detached
    _owner = owner_token()
    if detached:
        argv = [sys.executable, "-m", "sealcheck.infra.keeper", _owner, str(run_dir.absolute())]
        keeper = spawn(argv, run_dir / "logs" / "keeper.log", env=os.environ)
        _owner = owner_token(keeper.pid)
    os.environ[OWNER_ENV] = _owner


def run_tag() -> str | None:
    """The absolute run directory this harness's children carry (``SEALCHECK_RUN``, set by
    :func:`mark_children`); None outside a run."""
    return os.environ.get(RUN_ENV)


def owner() -> str:
    """The owner token this harness's children carry: its own, or its keeper's
    (:func:`mark_children`); this process's own before any run."""
    return _owner or owner_token()


def owner_alive(token: str) -> bool:
    """Whether the process named by an :func:`owner_token` still runs (same pid, same start
    time: a reused pid is not the owner)."""
    pid_text, _, start = token.partition(":")
    try:
        pid = int(pid_text)
    except ValueError:
        return False
    return _start_time(pid) == start


def _die_with_parent() -> None:  # pragma: no cover - runs in the forked child
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def spawn(
    argv: Sequence[str],
    log_path: Path,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> subprocess.Popen[bytes]:
    """Start ``argv`` as an owned child logging to ``log_path`` (appended to); it dies with
    the harness unless :func:`mark_children` asked for detached children."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        return subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=dict(env) if env is not None else None,
            cwd=cwd,
            start_new_session=True,
            preexec_fn=None if _detached else _die_with_parent,
        )


def signal_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    """Send ``sig`` to the child's whole process group; a group already gone is fine."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, sig)


def terminate(proc: subprocess.Popen[bytes], timeout_s: float = 20.0) -> int:
    """SIGTERM the child's group, wait up to ``timeout_s``, then SIGKILL; return its exit code.

    A stopped (SIGSTOPped) child is continued first so it can act on SIGTERM.
    """
    if proc.poll() is None:
        signal_group(proc, signal.SIGCONT)
        signal_group(proc, signal.SIGTERM)
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            signal_group(proc, signal.SIGKILL)
    return proc.wait()


def proc_state(pid: int) -> str:
    """The kernel's one-letter state of ``pid`` (``T`` stopped, ``S`` sleeping, …; ``X`` gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return "X"
    return stat.rsplit(")", 1)[1].split()[0]


def pause(proc: subprocess.Popen[bytes], timeout_s: float = 5.0) -> None:
    """SIGSTOP the child's group and wait until the kernel reports it stopped."""
    signal_group(proc, signal.SIGSTOP)
    _wait_state(proc.pid, lambda s: s in "TtXZ", timeout_s, "stopped")


def resume(proc: subprocess.Popen[bytes], timeout_s: float = 5.0) -> None:
    """SIGCONT the child's group and wait until it is no longer stopped."""
    signal_group(proc, signal.SIGCONT)
    _wait_state(proc.pid, lambda s: s not in "Tt", timeout_s, "running")


def _wait_state(pid: int, ok: Callable[[str], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not ok(state := proc_state(pid)):
        if time.monotonic() > deadline:
            raise TimeoutError(f"pid {pid} not {what} after {timeout_s}s (state {state!r})")
        time.sleep(0.01)
