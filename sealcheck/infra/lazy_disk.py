"""A directory that can lose its un-fsynced writes: the :mod:`sealcheck.infra.lazyfs` daemon
mounted over a backing directory, started, driven and unmounted from the harness.

The daemon is an owned child (:func:`sealcheck.infra.procs.spawn`: it dies with the harness),
and its mount's source names the harness (``sealcheck-lazyfs@<owner token>``), so
:func:`stale_mounts` finds the mount a dead harness left (:mod:`sealcheck.infra.sweep` unmounts it).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sealcheck.infra import procs
from sealcheck.infra.lazyfs import CONTROL, FSNAME

DESTROY_WAIT_S = 20.0
"""How long :meth:`LazyDisk.stop` lets the daemon write kept pages back after the unmount."""

FUSE_HINT = (
    "the lost-writes nemesis needs FUSE: /dev/fuse and Debian's fuse3 and libfuse3-3 "
    "(`sealcheck setup` installs them when run as root); or leave `lost-writes` out of "
    "--nemesis"
)


class LazyDiskError(RuntimeError):
    """The filesystem could not be mounted or driven (the message says what to do)."""


def fuse_missing() -> str:
    """Why FUSE cannot be used here ("" when it can)."""
    if not Path("/dev/fuse").exists():
        return "no /dev/fuse on this machine"
    from ctypes.util import find_library

    if not find_library("fuse3") and not find_library("fuse"):
        return "libfuse is not installed"
    return ""


def _mounted(mountpoint: Path) -> bool:
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return False
    return any(line.split()[4] == str(mountpoint) for line in lines if len(line.split()) > 4)


def unmount(mountpoint: Path) -> bool:
    """Unmount ``mountpoint`` (lazily if busy); True if something was mounted there."""
    if not _mounted(mountpoint):
        return False
    for argv in (["fusermount3", "-u", str(mountpoint)], ["umount", "-l", str(mountpoint)]):
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            subprocess.run(argv, capture_output=True, timeout=30, check=False)
        if not _mounted(mountpoint):
            return True
    return not _mounted(mountpoint)


class LazyDisk:
    """One lazy mount: ``mountpoint`` shows ``backing``; un-fsynced contents can be dropped."""

    def __init__(self, backing: Path, mountpoint: Path, log: Path) -> None:
        # absolute: the kernel lists mounts by absolute path (a relative ``--runs`` once
        # made every run wait 20 s for a mount it could not see)
        self.backing, self.mountpoint = backing.resolve(), mountpoint.resolve()
        self.log = log
        self._proc: subprocess.Popen[bytes] | None = None
        # a command and the read of its reply are one exchange: nemesis threads share the disk
        self._lock = threading.Lock()

    def start(self, timeout_s: float = 20.0) -> None:
        """Mount it and wait until the kernel lists the mount."""
        why = fuse_missing()
        if why:
            raise LazyDiskError(f"{why}: {FUSE_HINT}")
        self.backing.mkdir(parents=True, exist_ok=True)
        self.mountpoint.mkdir(parents=True, exist_ok=True)
        argv = [
            sys.executable,
            "-m",
            "sealcheck.infra.lazyfs",
            str(self.backing),
            str(self.mountpoint),
        ]
        self._proc = procs.spawn([*argv, procs.owner()], self.log)
        deadline = time.monotonic() + timeout_s
        while not _mounted(self.mountpoint):
            if self._proc.poll() is not None:
                tail = self.log.read_text(errors="replace")[-600:] if self.log.exists() else ""
                raise LazyDiskError(
                    f"the lazyfs daemon exited ({self._proc.returncode}) before mounting "
                    f"{self.mountpoint}: {tail.strip()} ({FUSE_HINT})"
                )
            if time.monotonic() > deadline:
                self.stop()
                raise LazyDiskError(f"{self.mountpoint} was not mounted in {timeout_s:.0f}s")
            time.sleep(0.05)

    def _control(self, command: str | None) -> dict[str, Any]:
        path = self.mountpoint / CONTROL.lstrip("/")
        with self._lock:
            if command is not None:
                with open(path, "w") as f:
                    f.write(command)
            reply: dict[str, Any] = json.loads(path.read_text())
        return reply

    def drop(self) -> dict[str, Any]:
        """Lose every write not yet fsynced: ``dropped`` says how many files and bytes."""
        return self._control("drop")

    def sync(self) -> dict[str, Any]:
        """Make every kept write durable (what the OS's periodic writeback does to old dirty
        pages): used once a node's setup is done, so a drop loses what the run wrote, not the
        node's formatting."""
        return self._control("sync")

    def counters(self) -> dict[str, Any]:
        """What is kept (un-fsynced) now, what drops lost so far, which crash point is armed
        and which fired (``crashes``)."""
        return self._control(None)

    def arm_crash(
        self,
        op: str,
        k: int,
        path: str = "",
        only: int | None = None,
        when: str = "after",
        do: str = "kill",
        errno: str = "EIO",
        slow: str = "",
        slow_ms: int = 0,
        gate: str = "",
        min_write: int = 0,
        watch_until: str = "",
        watch_count: str = "",
        next_call: bool = False,
        spare: tuple[int, ...] = (),
        fresh: bool = False,
    ) -> dict[str, Any]:
        """At the ``k``-th ``op`` (``fsync``, ``rename``, ``create``, ``write``) of one kind
        of file whose mount path matches ``path``, ``when`` (``after`` it is done, or
        ``before``), ``do`` one thing inside that call (:mod:`sealcheck.infra.crash_points`):
        ``kill`` the caller's process group, ``fail`` the call with ``errno``, or ``hold`` it
        until :meth:`release`. While armed, writes to files matching ``slow`` wait
        ``slow_ms`` each. With ``gate``, the first such call after the ``k``-th rename of a
        file matching ``gate``; with ``min_write``, an fsync counts only after a write of at
        least that many bytes to its file (a SQLite WAL's: a commit frame); with
        ``watch_until``, when it fires it starts a watch of the commits of files matching
        ``watch_count`` until the file ``watch_until`` names (``{n}``: the fired call's batch);
        with ``next_call``, it fires before the caller's next call, once the matching one
        has returned.
        The harness's own process group is spared, and with ``only`` only that process group
        is counted; process groups in ``spare`` never are (an incarnation about to be
        killed, so that only its successor's calls count); with ``fresh``, only process
        groups started since the arming are."""
        spec: dict[str, Any] = {"op": op, "k": k, "path": path}
        spec["spare"] = [os.getpgid(0), *spare]
        spec.update(when=when, do=do, errno=errno, slow=slow, slow_ms=slow_ms, gate=gate)
        spec.update(min_write=min_write, watch_until=watch_until, watch_count=watch_count)
        spec.update(next_call=next_call, fresh=fresh)
        if only is not None:
            spec["only"] = [only]
        return self._control("arm " + json.dumps(spec))

    def watch(self, until: str, count: str, min_write: int = 0) -> dict[str, Any]:
        """Count the commits (fsyncs after a write of ``min_write`` bytes) of files matching
        ``count`` until a file matching ``until`` is renamed into place; the counters'
        ``watches`` say how many (:class:`sealcheck.infra.crash_points.Watch`)."""
        spec = {"until": until, "count": count, "min_write": min_write, "spare": [os.getpgid(0)]}
        return self._control("watch " + json.dumps(spec))

    def release(self) -> dict[str, Any]:
        """Let a held call go on (``released``: whether one was held)."""
        return self._control("release")

    def disarm_crash(self) -> dict[str, Any]:
        """Disarm a crash point that has not fired (``disarmed``)."""
        return self._control("disarm")

    def stop(self) -> None:
        """Unmount (a clean shutdown: kept writes reach the backing directory first) and end
        the daemon."""
        unmount(self.mountpoint)
        if self._proc is not None:
            # the daemon writes the kept pages back in ``destroy``, after the kernel has
            # already dropped the mount: let it finish and exit on its own before any SIGTERM
            # (terminating at once lost a file's contents now and then)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._proc.wait(timeout=DESTROY_WAIT_S)
            procs.terminate(self._proc, 10.0)
            self._proc = None


@dataclass(frozen=True)
class StaleMount:
    """A lazyfs mount and the harness that owns it (:func:`stale_mounts`: one that is gone)."""

    mountpoint: str
    owner: str


def lazy_mounts() -> list[StaleMount]:
    """Every lazyfs mount on this machine, with the harness that owns it."""
    try:
        lines = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        source, mountpoint, fstype, *_ = [*line.split(), "", "", ""]
        if fstype != f"fuse.{FSNAME}" or "@" not in source:
            continue
        found.append(StaleMount(mountpoint.replace("\\040", " "), source.partition("@")[2]))
    return found


def stale_mounts() -> list[StaleMount]:
    """lazyfs mounts whose owner (harness) no longer runs, except those of a run left running
    on purpose (``--leave-running``: :mod:`sealcheck.infra.left_running`; ``sealcheck cleanup``
    ends them)."""
    from sealcheck.infra.left_running import left_running_root

    return [
        m
        for m in lazy_mounts()
        if not procs.owner_alive(m.owner) and left_running_root(Path(m.mountpoint)) is None
    ]
