"""Faults at durability boundaries, taken inside the filesystem (the lazy disk's daemon,
:mod:`sealcheck.infra.lazyfs`): "at the k-th ``rename`` into ``commits/``, before it is done,
kill the writer" — as ALICE and CrashMonkey put crash points at every durability boundary,
lazyfs crashes before or after the N-th fsync of a named file, and CharybdeFS fails a named
file's calls with an errno.

Armed through the lazy disk's control file (``arm {"op": "rename", "k": 3, "path": "...",
"when": "before", "do": "kill"}``), a :class:`CrashPoint` counts, per kind of file and from the
moment it was armed, the operations ``op`` (:data:`OPS`: ``fsync``, ``rename``, ``create``,
``write``) on files whose mount path matches ``path`` (a regular expression, searched; empty:
every file; for a rename, the new path). A kind of file is its path with every UUID made ``U``
and every number ``N`` (:func:`kind_of`): a checkpoint's ``offsets/17`` and ``offsets/18`` are
the 1st and 2nd of ``offsets/N``, its temporary files ``.17.<uuid>.tmp`` one kind too, a Delta
table's commits likewise, a SQLite WAL is one file. At the call that makes some kind's
count reach ``k`` — ``when`` ``after`` it is done (the data durable, the rename made) or
``before`` (nothing of it done) — the point does ``do``:

* ``kill``: SIGKILL the calling process's whole process group before the call returns: the
  writer never runs another instruction, and nothing races it. A call killed ``before`` is
  never done (the daemon answers it with ``EIO``, to a process that is gone);
* ``fail``: answer the call with ``errno`` (``ENOSPC``, ``EIO``, ...) — ``before``: not done,
  as a full or broken disk does;
* ``hold``: keep the call waiting (``before``: not yet done; ``after``: done, not yet
  returned) until ``release`` on the control file (or a disarm): the harness may kill or stop
  the job meanwhile. The daemon serves every other call on its other threads (the kernel
  keeps a held rename's or create's directory locked, though: listing it waits); a held call
  whose caller was killed meanwhile is not done after it (a dead process's rename must not
  land; the kernel lets the killed caller die only once its call is answered).

With ``min_write`` (bytes), an ``fsync`` counts only on a file written since its last fsync
in a way that makes it a commit's (:func:`makes_commit`: a SQLite WAL's commit frame, or a
write of at least that size to any other file) — not the sync of a new log's header alone.

With ``next_call``, the point fires not in the matching call but before the caller's process
group's next call on the mount, whatever it is: just after a commit has returned (a SQLite
writer killed inside its commit's fsync leaves a commit other connections never see).

With ``gate`` (a path pattern), the point counts renames of files matching ``gate`` instead,
and fires at the first ``op`` on ``path`` after the ``k``-th of them: "the first ``fsync`` of
the sink's files after ``offsets/N`` is in place" (a batch's first sink commit), "the first
``write`` to the sink after it" (fail it with ``ENOSPC``) — what a job does after a boundary
of its own, whatever its files are called.

With ``fresh``, only process groups whose leader started after the arming are counted: the
``k``-th commit of an incarnation started since (the harness arms it, then kills the running
one), not of one running before it.

While a point is armed, ``slow`` (a path pattern) and ``slow_ms`` make the first ``write`` to
a matching file by a counted process after the arming, and after each call the point counts,
wait first: a batch's first sink write made late, so a write the job did not await is still in
flight when the point fires (a correct job awaits it: its batch is ``slow_ms`` slower).

The page cache is left alone (a process crash, not a power cut: what was written but not
fsynced stays). With ``only``, only those process groups are counted (the harness arms it for
the running incarnation's). A point fires once, then disarms; :meth:`CrashPoints.counters`
records each firing (``crashes``), a call held now (``holding``) and what the last point
disarmed unfired had counted (``unfired``: whether its gate ever opened).

A :class:`Watch` (``watch {"until": ..., "count": ..., "min_write": ...}``) acts on nothing:
it counts a job's sink commits until a file is renamed into place — after a crash that left
batch N to replay, what the restarted job committed before its ``commits/N`` (none: it
skipped what it had applied). Watches are kept in ``watches``, in order.
"""

from __future__ import annotations

import errno as errnos
import os
import re
import signal
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from sealcheck.infra.caller import doomed, started, ticks_now
from sealcheck.infra.crash_watch import Watch, makes_commit

#: the operations a point can be put on, and the sides of one
OPS = ("fsync", "rename", "create", "write")
WHEN = ("after", "before")
#: what a point does when it fires
DOS = ("kill", "fail", "hold")


@dataclass
class CrashPoint:
    """One armed point and what it counted (the daemon's bookkeeping)."""

    op: str
    k: int
    path: str = ""
    #: process groups never counted (the harness's own, the daemon's)
    spare: tuple[int, ...] = ()
    #: the only process groups counted (the system under test's incarnation); empty: any
    only: tuple[int, ...] = ()
    when: str = "after"
    do: str = "kill"
    #: the error a ``fail`` point answers with
    errno: int = errnos.EIO
    #: while armed, the first ``write`` to a file matching ``slow`` after the arming and
    #: after each call the point counts waits ``slow_ms`` (a sink's next write made late, so
    #: one the job did not await is still in flight when the point fires); empty: none
    slow: str = ""
    slow_ms: int = 0
    #: whether the next matching write waits
    slow_next: bool = True
    #: renames of files matching ``gate`` are counted instead; the point fires at the first
    #: matching call after the ``k``-th (empty: no gate)
    gate: str = ""
    #: the gate rename that opened the point (None: not yet)
    opened_by: str | None = None
    #: an ``fsync`` counts only on a file written since its last fsync with a write of at
    #: least this many bytes (0: every fsync): a commit's, not a header's (SQLite syncs a new
    #: WAL's 32-byte header before the first transaction after each reset)
    min_write: int = 0
    #: files written with at least ``min_write`` bytes since their last fsync
    dirty: set[str] = field(default_factory=set)
    #: database files whose write-ahead log was seen (:func:`makes_commit`)
    logged: set[str] = field(default_factory=set)
    #: when it fires, start a :class:`Watch` until the file this names (``{n}``: the last
    #: number of the fired call's gate file, else of its own path) counting commits of files
    #: matching ``watch_count``: what the restarted job commits in its replay (empty: none)
    watch_until: str = ""
    watch_count: str = ""
    #: fire at the caller's process group's next call on the mount (``before`` it, whatever
    #: it is) after the matching one: just after a commit has *returned* — a SQLite writer
    #: updates its WAL index after the commit's fsync, and one killed inside that fsync
    #: leaves a commit other connections never see (and the next writer overwrites)
    next_call: bool = False
    #: with ``fresh``, the moment it was armed (clock ticks since boot): only process groups
    #: whose leader started since then are counted (a restarted incarnation; not the one
    #: being killed, nor a zombie writer left beside it)
    born: int | None = None
    #: whether each process group seen was started since ``born``
    young: dict[int, bool] = field(default_factory=dict)
    #: the matching call, waiting for that next one
    triggered: dict[str, Any] | None = None
    counts: dict[str, int] = field(default_factory=dict)
    fired: dict[str, Any] | None = None

    @staticmethod
    def from_json(doc: dict[str, Any]) -> CrashPoint:
        """The spec the control file was given; a ValueError naming what is wrong."""
        op, k = doc.get("op"), doc.get("k")
        when, do = doc.get("when", "after"), doc.get("do", "kill")
        if op not in OPS:
            raise ValueError(f"op {op!r}: use one of {', '.join(OPS)}")
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise ValueError(f"k {k!r}: use a whole number from 1")
        if when not in WHEN:
            raise ValueError(f"when {when!r}: use one of {', '.join(WHEN)}")
        if do not in DOS:
            raise ValueError(f"do {do!r}: use one of {', '.join(DOS)}")
        code = getattr(errnos, str(doc.get("errno", "EIO")), None)
        if not isinstance(code, int):
            raise ValueError(f"errno {doc.get('errno')!r}: use a name such as ENOSPC or EIO")
        path = str(doc.get("path") or "")
        re.compile(path)
        spare = tuple(int(g) for g in doc.get("spare") or ())
        only = tuple(int(g) for g in doc.get("only") or ())
        slow, slow_ms = str(doc.get("slow") or ""), doc.get("slow_ms", 0)
        re.compile(slow)
        if not isinstance(slow_ms, int) or isinstance(slow_ms, bool) or not 0 <= slow_ms <= 10_000:
            raise ValueError(f"slow_ms {slow_ms!r}: use a whole number of milliseconds to 10000")
        point = CrashPoint(op, k, path, (*spare, os.getpgid(0)), only, when, do, code)
        point.slow, point.slow_ms = slow, slow_ms if slow else 0
        point.gate = str(doc.get("gate") or "")
        re.compile(point.gate)
        point.next_call = bool(doc.get("next_call"))
        point.born = ticks_now() if doc.get("fresh") else None
        point.watch_until = str(doc.get("watch_until") or "")
        point.watch_count = str(doc.get("watch_count") or "")
        re.compile(point.watch_until.replace("{n}", "0"))
        re.compile(point.watch_count)
        min_write = doc.get("min_write", 0)
        if not isinstance(min_write, int) or isinstance(min_write, bool) or min_write < 0:
            raise ValueError(f"min_write {min_write!r}: use a whole number of bytes from 0")
        point.min_write = min_write
        return point

    def counted(self, path: str, pid: int) -> int | None:
        """The process group of ``pid`` when its calls on ``path`` count (not spared, of
        ``only``), else None."""
        try:
            group = os.getpgid(pid)
        except OSError:  # the caller is already gone
            return None
        if group in self.spare or group <= 1:  # the harness's own fsync: not counted
            return None
        if self.only and group not in self.only:  # not the system under test
            return None
        if self.born is not None:
            if group not in self.young:
                self.young[group] = started(group) >= self.born
            if not self.young[group]:  # running since before the arming
                return None
        return group

    def passed(
        self,
        op: str,
        path: str,
        pid: int,
        when: str = "after",
        existed: bool | None = None,
        data: bytes = b"",
        offset: int = 0,
    ) -> bool:
        """Count one ``op`` on ``path`` by ``pid`` at ``when`` (``data``, ``offset``: a
        write's);
        at the ``k``-th on one kind of file, fire: record it (:attr:`fired`, with
        ``existed``: whether ``path`` was there before the call) and, for ``kill``, kill
        ``pid``'s process group. True when it fired (the caller then does what :attr:`do`
        says)."""
        if self.fired is not None:
            return False
        if self.triggered is not None:
            return self._next(op, path, pid, when)
        writes = self.min_write and (op, when) == ("write", "after")
        if writes and makes_commit(path, data, offset, self.min_write, self.logged):
            self.dirty.add(path)
        if self.min_write and op == "fsync" == self.op and when == self.when:
            if path not in self.dirty:
                return False  # a header's sync, or nothing the point waits for
            self.dirty.discard(path)
        if self.gate and self.opened_by is None:
            self._gated(op, path, pid, when)
            return False
        if (op, when) != (self.op, self.when) or not re.search(self.path, path):
            return False
        group = self.counted(path, pid)
        if group is None:
            return False
        self.slow_next = True  # the next write to the sink after this call waits
        kind = kind_of(path)
        n = self.counts[kind] = self.counts.get(kind, 0) + 1
        if n < self.k and not self.gate:
            return False
        if self.next_call:  # wait for the caller's next call: this one returns first
            self.triggered = {"op": op, "path": path, "pgid": group, "existed": existed, "k": n}
            return False
        if self.do == "kill":
            os.killpg(group, signal.SIGKILL)
        fired = {"op": op, "when": when, "do": self.do, "path": path, "k": n, "pid": pid}
        self._record(fired, pgid=group, existed=existed)
        return True

    def _record(self, fired: dict[str, Any], **more: Any) -> None:
        """Keep ``fired`` (and ``more``) as the firing's record, with its time, the errno a
        ``fail`` answers and the gate file that opened the point."""
        self.fired = {**fired, **more, "at_ns": time.time_ns()}
        if self.do == "fail":
            self.fired["errno"] = errnos.errorcode.get(self.errno, str(self.errno))
        if self.opened_by is not None:
            self.fired["after"] = self.opened_by

    def _next(self, op: str, path: str, pid: int, when: str) -> bool:
        """With ``next_call``: fire before the triggering group's next call; the record
        names the triggering call (its ``op``, ``path``) and this one (``next``)."""
        assert self.triggered is not None
        try:
            group = os.getpgid(pid)
        except OSError:
            return False
        if when != "before" or group != self.triggered["pgid"]:
            return False
        if self.do == "kill":
            os.killpg(group, signal.SIGKILL)
        fired = {"k": 1, **self.triggered, "when": "after", "do": self.do, "pid": pid}
        self._record(fired, next={"op": op, "path": path})
        return True

    def _gated(self, op: str, path: str, pid: int, when: str) -> None:
        """Count a rename through the gate; open the point at the ``k``-th."""
        if (op, when) != ("rename", "after") or not re.search(self.gate, path):
            return
        if self.counted(path, pid) is None:
            return
        kind = "gate:" + kind_of(path)
        if (n := self.counts.get(kind, 0) + 1) >= self.k:
            self.opened_by = path
        self.counts[kind] = n


#: a random UUID in a file's name (Spark's and Delta's temporary files: ``.7.<uuid>.tmp``)
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def kind_of(path: str) -> str:
    """The kind of file ``path`` is: every UUID made ``U`` and every number ``N`` —
    ``offsets/17`` and ``offsets/18`` are one kind, as are ``commits/.7.<uuid>.tmp`` and
    ``commits/.8.<uuid>.tmp``."""
    return re.sub(r"\d+", "N", UUID.sub("U", path))


class CrashPoints:
    """The daemon's one armed point at a time, and the call it holds (thread-safe: the daemon
    serves calls on several threads)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.armed: CrashPoint | None = None
        self.fired: list[dict[str, Any]] = []
        self.holding: dict[str, Any] | None = None
        #: the last point disarmed before it fired: what it had counted (why it never fired)
        self.unfired: dict[str, Any] | None = None
        #: what the job commits until a file appears (:class:`Watch`), oldest first
        self.watches: list[Watch] = []
        self._watching = False  # a watch is not done: every call is looked at
        self._release = threading.Event()

    def arm(self, doc: dict[str, Any]) -> None:
        """Arm from the control file's JSON (replacing one armed before)."""
        point = CrashPoint.from_json(doc)
        with self.lock:
            self.armed = point

    def watch(self, doc: dict[str, Any]) -> None:
        """Start a :class:`Watch` from the control file's JSON."""
        watch = Watch.from_json(doc)
        with self.lock:
            self.watches.append(watch)
            self._watching = True

    def _then_watch(self, point: CrashPoint) -> None:
        """Start the watch a point that fired asks for (under the lock), at once: the
        restarted job's replay may begin before anyone reads the counters."""
        fired = point.fired or {}
        number = re.search(r"(\d+)$", str(fired.get("after") or fired.get("path") or ""))
        if not point.watch_until or number is None:
            return
        until = point.watch_until.replace("{n}", number.group(1))
        least = point.min_write or 1
        self.watches.append(Watch(until, point.watch_count, least, point.spare))
        self._watching = True
        fired["watching"] = until

    def disarm(self) -> bool:
        """Disarm, and release a held call; True if one was armed and had not fired."""
        self._release.set()
        with self.lock:
            was, self.armed = self.armed, None
            if was is not None:
                self.unfired = {"op": was.op, "gate": was.gate, "opened_by": was.opened_by}
                self.unfired["counts"] = dict(was.counts)
            return was is not None

    def release(self) -> bool:
        """Let a held call go on; True if one was held."""
        with self.lock:
            held = self.holding is not None
        self._release.set()
        return held

    def slowed(self, path: str, pid: int) -> float:
        """Seconds a ``write`` to ``path`` by ``pid`` waits before it is done (the armed
        point's ``slow``; 0: none). The caller sleeps, outside every lock."""
        if self.armed is None:  # every write passes here: no lock while nothing is armed
            return 0.0
        with self.lock:
            point = self.armed
            if point is None or not point.slow_ms or not point.slow_next:
                return 0.0
            if not re.search(point.slow, path) or point.counted(path, pid) is None:
                return 0.0
            point.slow_next = False
            point.counts["slowed"] = point.counts.get("slowed", 0) + 1
            return point.slow_ms / 1000

    def passed(
        self,
        op: str,
        path: str,
        pid: int,
        when: str = "after",
        existed: bool | None = None,
        data: bytes = b"",
        offset: int = 0,
    ) -> int:
        """At ``when`` of ``op`` on ``path`` by ``pid`` (``data``, ``offset``: a write's), inside
        the filesystem call: 0 to go on, or the errno to answer the call with instead (a
        ``kill`` before the call, a ``fail``, a held call whose caller died). A ``hold`` waits
        here until released."""
        if self.armed is None and not self._watching:  # every call: no lock while idle
            return 0
        with self.lock:
            if self._watching:
                for watch in self.watches:
                    watch.saw(op, path, pid, when, data, offset)
                self._watching = not all(w.done for w in self.watches)
            point = self.armed
            if point is None or not point.passed(op, path, pid, when, existed, data, offset):
                return 0
            assert point.fired is not None
            if point.slow_ms:
                point.fired["slowed_writes"] = point.counts.get("slowed", 0)
            self.fired.append(point.fired)
            self.armed = None
            self._then_watch(point)
            if point.do == "hold":
                self._release.clear()
                self.holding = point.fired
        if point.do == "fail":
            return point.errno
        if point.do == "kill":
            return errnos.EIO if when == "before" else 0
        self._release.wait()
        with self.lock:
            self.holding = None
            died = when == "before" and doomed(pid)
            if died:
                point.fired["caller_died"] = True  # its call is never done
        return errnos.EINTR if died else 0

    def counters(self) -> dict[str, Any]:
        """What is armed, which fired, which call is held now (the control file's reply)."""
        with self.lock:
            armed = self.armed
            spec = None
            if armed is not None:
                spec = {"op": armed.op, "k": armed.k, "when": armed.when, "do": armed.do}
                spec.update(gate=armed.gate, opened_by=armed.opened_by)
            fired, holding, unfired = list(self.fired), self.holding, self.unfired
            watches = [w.to_json() for w in self.watches]
            return {"crash_armed": spec, "crashes": fired, "holding": holding, "unfired": unfired,
                    "watches": watches}  # fmt: skip
