"""What a job commits to its sink, seen from inside the lazy disk's daemon
(:mod:`sealcheck.infra.lazyfs`): which write makes a file's next fsync a commit's
(:func:`makes_commit`) and a :class:`Watch` that counts a job's sink commits until a file is
renamed into place — after a crash that left batch N to replay, what the restarted job
committed before its ``commits/N`` (none: it skipped what it had applied). Used by the crash
points (:mod:`sealcheck.infra.crash_points`), which start a watch as a point fires.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any

#: the header of a frame of a SQLite write-ahead log, and where the first frame starts
WAL_FRAME, WAL_HEADER = 24, 32


def makes_commit(path: str, data: bytes, offset: int, least: int, logged: set[str]) -> bool:
    """Whether this write makes the file's next fsync a commit's: in a SQLite write-ahead log
    (``*-wal``), the header of a commit frame (its "database size after commit" field set:
    https://sqlite.org/fileformat.html#the_write_ahead_log) — the sync of a new log's header
    alone is no commit, nor is a checkpoint's sync of the database file of a log seen before
    (``logged``: those files, kept up to date here); in any other file, a write of ``least``
    bytes."""
    if path.endswith("-wal"):
        logged.add(path.removesuffix("-wal"))
        if offset < WAL_HEADER or len(data) < WAL_FRAME:
            return False
        return int.from_bytes(data[4:8], "big") != 0
    return path not in logged and len(data) >= least


@dataclass
class Watch:
    """What a job commits to its sink until a file is renamed into place: after a crash that
    left batch N to replay, the sink's commits (fsyncs of files matching ``count`` after a
    write of ``min_write`` bytes) until ``commits/N`` (``until``) — none: the restarted job
    skipped what it had applied. It never acts on a call."""

    until: str
    count: str
    min_write: int = 0
    #: process groups never counted (the harness's own)
    spare: tuple[int, ...] = ()
    commits: int = 0
    done: bool = False
    dirty: set[str] = field(default_factory=set)
    logged: set[str] = field(default_factory=set)

    @staticmethod
    def from_json(doc: dict[str, Any]) -> Watch:
        """The spec the control file was given; a ValueError naming what is wrong."""
        until, count = str(doc.get("until") or ""), str(doc.get("count") or "")
        if not until:
            raise ValueError("until: give the pattern of the file whose rename ends the watch")
        re.compile(until)
        re.compile(count)
        least = doc.get("min_write", 0)
        if not isinstance(least, int) or isinstance(least, bool) or least < 0:
            raise ValueError(f"min_write {least!r}: use a whole number of bytes from 0")
        spare = tuple(int(g) for g in doc.get("spare") or ())
        return Watch(until, count, least, (*spare, os.getpgid(0)))

    def saw(self, op: str, path: str, pid: int, when: str, data: bytes, offset: int) -> None:
        """One call on the mount, by ``pid``."""
        if self.done or when != "after":
            return
        try:
            if os.getpgid(pid) in self.spare:
                return
        except OSError:
            return
        if op == "rename" and re.search(self.until, path):
            self.done = True
        elif op == "write" and re.search(self.count, path):
            if makes_commit(path, data, offset, self.min_write, self.logged):
                self.dirty.add(path)
        elif op == "fsync" and path in self.dirty:
            self.dirty.discard(path)
            self.commits += 1

    def to_json(self) -> dict[str, Any]:
        """The counters' form."""
        return {"until": self.until, "commits": self.commits, "done": self.done}
