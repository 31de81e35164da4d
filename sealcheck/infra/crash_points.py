"""Crashes at durability boundaries, taken inside the filesystem (the lazy disk's daemon,
:mod:`sealcheck.infra.lazyfs`): "after its k-th ``fsync`` (or ``rename``) of one file, kill the
writer" — as ALICE and CrashMonkey put crash points at every durability boundary.

Armed through the lazy disk's control file (``arm {"op": "fsync", "k": 3, "path": "..."}``),
a :class:`CrashPoint` counts, per kind of file and from the moment it was armed, the operations
of its kind on files whose mount path matches ``path`` (a regular expression, searched; empty:
every file). A kind of file is its path with every number made ``N``: a checkpoint's
``offsets/17`` and ``offsets/18`` are the 1st and 2nd of ``offsets/N``, a Delta table's
commits likewise, a SQLite WAL is one file. The call that makes some kind's count reach ``k``
is done first (the data is durable, the
rename made), then the calling process's whole process group is SIGKILLed *before the call
returns*: the writer never runs another instruction, and nothing races it. The page cache is
left alone (a process crash, not a power cut: what was written but not fsynced stays). With
``only``, only those process groups are counted (the harness arms it for the running
incarnation's). It fires once, then disarms.
"""

from __future__ import annotations

import os
import re
import signal
import threading
import time
from dataclasses import dataclass, field
from typing import Any

#: the operations a crash point can follow
OPS = ("fsync", "rename")


@dataclass
class CrashPoint:
    """One armed crash point and what it counted (the daemon's bookkeeping)."""

    op: str
    k: int
    path: str = ""
    #: process groups never killed (the harness's own, the daemon's)
    spare: tuple[int, ...] = ()
    #: the only process groups counted (the system under test's incarnation); empty: any
    only: tuple[int, ...] = ()
    counts: dict[str, int] = field(default_factory=dict)
    fired: dict[str, Any] | None = None

    @staticmethod
    def from_json(doc: dict[str, Any]) -> CrashPoint:
        """The spec the control file was given; a ValueError naming what is wrong."""
        op, k = doc.get("op"), doc.get("k")
        if op not in OPS:
            raise ValueError(f"op {op!r}: use one of {', '.join(OPS)}")
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise ValueError(f"k {k!r}: use a whole number from 1")
        path = str(doc.get("path") or "")
        re.compile(path)
        spare = tuple(int(g) for g in doc.get("spare") or ())
        only = tuple(int(g) for g in doc.get("only") or ())
        return CrashPoint(op, k, path, (*spare, os.getpgid(0)), only)

    def passed(self, op: str, path: str, pid: int) -> bool:
        """Count one ``op`` on ``path`` done by ``pid``; at the ``k``-th on one file, kill
        ``pid``'s process group and record it. True when it fired."""
        if self.fired is not None or op != self.op or not re.search(self.path, path):
            return False
        try:
            group = os.getpgid(pid)
        except OSError:  # the caller is already gone
            return False
        if group in self.spare or group <= 1:  # the harness's own fsync: not counted
            return False
        if self.only and group not in self.only:  # not the system under test
            return False
        kind = re.sub(r"\d+", "N", path)  # offsets/17 and offsets/18: one kind of file
        n = self.counts[kind] = self.counts.get(kind, 0) + 1
        if n < self.k:
            return False
        os.killpg(group, signal.SIGKILL)
        self.fired = {"op": op, "path": path, "k": n, "pid": pid, "pgid": group}
        self.fired["at_ns"] = time.time_ns()
        return True


class CrashPoints:
    """The daemon's one armed crash point at a time (thread-safe)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.armed: CrashPoint | None = None
        self.fired: list[dict[str, Any]] = []

    def arm(self, doc: dict[str, Any]) -> None:
        """Arm from the control file's JSON (replacing one armed before)."""
        point = CrashPoint.from_json(doc)
        with self.lock:
            self.armed = point

    def disarm(self) -> bool:
        """Disarm; True if one was armed and had not fired."""
        with self.lock:
            was, self.armed = self.armed, None
            return was is not None

    def passed(self, op: str, path: str, pid: int) -> None:
        """After ``op`` on ``path`` by ``pid`` was done, inside the filesystem call."""
        with self.lock:
            point = self.armed
            if point is None or not point.passed(op, path, pid):
                return
            assert point.fired is not None
            self.fired.append(point.fired)
            self.armed = None

    def counters(self) -> dict[str, Any]:
        """What was armed and what fired (the control file's reply)."""
        with self.lock:
            armed = self.armed
            return {
                "crash_armed": None if armed is None else {"op": armed.op, "k": armed.k},
                "crashes": list(self.fired),
            }
