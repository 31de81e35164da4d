"""A FUSE filesystem that loses un-fsynced writes on command (the daemon; Jepsen's lazyfs, in
Python on ``mfusepy`` and libfuse 3).

It mirrors a *backing* directory at a mount point. File contents written through the mount
are kept apart, page by page (4 KiB, like the kernel's page cache), in the daemon's memory
until the file is fsynced: then they go to the backing file, which is fsynced too. Reads see
the backing file with the kept pages on top, so every process sees what was written, as on a
real machine. Writing ``drop`` to the control file ``/.lazyfs`` throws every kept page away —
what a power cut does to a page cache — and ``sync`` writes them all (what a clean shutdown
does); ``arm {...}`` arms a crash point (:mod:`sealcheck.infra.crash_points`: before or after
the k-th fsync, rename, create or write of a named kind of file, the writer's process group
SIGKILLed, the call failed with an errno, or held), ``release`` lets a held call go on and
``disarm`` disarms; reading the control file gives JSON counters: what is kept now, what was
dropped, which crash point is armed, which fired and which call is held.

The daemon serves calls on several threads (libfuse's multi-threaded loop), so a held call
stalls only its caller: the control file, other writers and the observer's reads go on.

What is and is not simulated:

* contents (``write``) and sizes (``truncate``) are lazy until ``fsync``/``fdatasync``;
* creating, removing and renaming files and directories reach the backing directory at once
  (a journaling filesystem after its commit interval): only file *contents* are ever lost;
* memory-mapped index files pass straight through (:data:`PASSTHROUGH`: SQLite's ``-shm``,
  rebuilt from the WAL after a crash; Kafka's ``.index`` and ``.timeindex``, rebuilt from the
  log segment for everything after the recovery point) and are the only files opened without
  ``direct_io``, so they can be ``mmap``-ed (FUSE refuses ``mmap`` of a ``direct_io`` file with
  ENODEV); every other file is ``direct_io``, so no process reads a page from the kernel's cache
  that a drop has taken away;
* locks are left to the kernel (every process using the mount is on this machine).

Unmounting (``fusermount3 -u``) is a clean shutdown: kept pages are written first.

Run as ``python -m sealcheck.infra.lazyfs BACKING MOUNTPOINT [OWNER]``;
:mod:`sealcheck.infra.lazy_disk`
starts,
drives and unmounts it.
"""

from __future__ import annotations

import errno
import json
import os
import re
import sys
import threading
import time
from itertools import count
from typing import Any

from sealcheck.infra.crash_points import CrashPoints
from sealcheck.infra.lazy_pages import PAGE, PASSTHROUGH, Kept, LazyState

__all__ = ["CONTROL", "FSNAME", "PAGE", "PASSTHROUGH", "Kept", "LazyState", "main"]

CONTROL = "/.lazyfs"  # write drop, sync, arm {...}, watch {...}, release or disarm; read counters
FSNAME = "sealcheck-lazyfs"


def _operations(state: LazyState) -> Any:  # pragma: no cover - exercised through a mount
    crashes = CrashPoints()
    import mfusepy as fuse  # loads libfuse: only in the daemon

    def oserror(fn: Any) -> Any:
        def wrapped(*args: Any) -> Any:
            try:
                return fn(*args)
            except OSError as exc:
                raise fuse.FuseOSError(exc.errno or errno.EIO) from None

        wrapped.__name__ = fn.__name__
        return wrapped

    def at(
        op: str, when: str, path: str, existed: bool | None = None, data: bytes = b"", at: int = 0
    ) -> None:
        """Where a crash point may fire: go on, or answer the call with its errno
        (``existed``: whether the call's target was there before it, for the record;
        ``data``, ``at``: a write's bytes and offset)."""
        pid = fuse.fuse_get_context()[2]
        code = crashes.passed(op, path, pid, when, existed, data, at)
        if code:
            raise fuse.FuseOSError(code)

    class LazyOps(fuse.Operations):  # type: ignore[misc]
        use_ns = True

        def __init__(self) -> None:
            self.guard = threading.Lock()  # calls come on several threads (not `lock`: a FUSE call)
            self.control_reply = b""  # the last command's reply, for the next read
            self.handles = count(1)  # one per open of the control file
            self.reading: dict[int, bytes] = {}  # what each open of the control file reads

        @oserror
        def getattr(self, path: str, fh: Any = None) -> dict[str, Any]:
            if path == CONTROL:
                return {"st_mode": 0o100666, "st_nlink": 1, "st_size": 0}
            st = os.lstat(state.real(path))
            attrs = {k: getattr(st, k) for k in ("st_mode", "st_nlink", "st_uid", "st_gid")}
            attrs.update(st_atime=st.st_atime_ns, st_mtime=st.st_mtime_ns)
            attrs.update(st_ctime=st.st_ctime_ns, st_size=st.st_size)
            if not (st.st_mode & 0o040000):
                attrs["st_size"] = state.size(path)
            return attrs

        def _open(self, path: str, fi: Any, fd: int) -> int:
            fi.fh = fd
            fi.direct_io = 0 if state.passthrough(path) else 1
            return 0

        @oserror
        def open(self, path: str, fi: Any) -> int:
            if path == CONTROL:  # a read sees the last command's reply once, else counters
                fi.direct_io = 1
                with self.guard:
                    fi.fh = next(self.handles)
                    if fi.flags & os.O_ACCMODE == os.O_RDONLY:
                        fresh = json.dumps({**state.counters(), **crashes.counters()}).encode()
                        self.reading[fi.fh] = self.control_reply or fresh
                        self.control_reply = b""
                return 0
            # read-write whatever was asked: pages are read back to be patched, and fsync
            # writes them through whichever descriptor it is called on
            fd = os.open(state.real(path), os.O_RDWR)
            if fi.flags & os.O_TRUNC:
                state.truncate(path, fd, 0)
            return self._open(path, fi, fd)

        @oserror
        def create(self, path: str, mode: int, fi: Any) -> int:
            at("create", "before", path)
            fd = os.open(state.real(path), os.O_RDWR | os.O_CREAT, mode)
            self._open(path, fi, fd)
            try:
                at("create", "after", path)
            except fuse.FuseOSError:
                os.close(fd)  # failed after the file was made: no handle for the caller
                raise
            return 0

        @oserror
        def read(self, path: str, size: int, offset: int, fi: Any) -> bytes:
            if path == CONTROL:
                with self.guard:
                    return self.reading.get(fi.fh, b"")[offset : offset + size]
            return state.read(path, fi.fh, size, offset)

        @oserror
        def write(self, path: str, data: bytes, offset: int, fi: Any) -> int:
            if path == CONTROL:
                command, _, arg = data.decode(errors="replace").strip().partition(" ")
                if command == "drop":
                    reply = {"dropped": state.drop(), **state.counters()}
                elif command == "sync":
                    reply = {"synced_files": state.sync_all(), **state.counters()}
                elif command == "arm":  # a crash point (sealcheck.infra.crash_points)
                    try:
                        crashes.arm(json.loads(arg))
                    except (ValueError, TypeError, re.error):
                        raise fuse.FuseOSError(errno.EINVAL) from None
                    reply = crashes.counters()
                elif command == "watch":  # what a job commits until a file appears
                    try:
                        crashes.watch(json.loads(arg))
                    except (ValueError, TypeError, re.error):
                        raise fuse.FuseOSError(errno.EINVAL) from None
                    reply = crashes.counters()
                elif command == "disarm":
                    reply = {"disarmed": crashes.disarm(), **crashes.counters()}
                elif command == "release":
                    reply = {"released": crashes.release(), **crashes.counters()}
                else:
                    raise fuse.FuseOSError(errno.EINVAL)
                with self.guard:
                    self.control_reply = json.dumps(reply).encode()
                return len(data)
            pause = crashes.slowed(path, fuse.fuse_get_context()[2])
            if pause:
                time.sleep(pause)  # on this call's thread: the rest of the mount goes on
            at("write", "before", path)
            done = state.write(path, fi.fh, data, offset)
            at("write", "after", path, data=data, at=offset)
            return done

        @oserror
        def truncate(self, path: str, length: int, fh: Any = None) -> int:
            if fh is not None:
                state.truncate(path, fh.fh, length)
                return 0
            fd = os.open(state.real(path), os.O_RDWR)
            try:
                state.truncate(path, fd, length)
            finally:
                os.close(fd)
            return 0

        @oserror
        def fsync(self, path: str, datasync: int, fi: Any) -> int:
            if path != CONTROL:
                at("fsync", "before", path)
                state.fsync(path, fi.fh)
                at("fsync", "after", path)
            return 0

        def flush(self, path: str, fi: Any) -> int:
            return 0

        @oserror
        def release(self, path: str, fi: Any) -> int:
            if path != CONTROL:
                os.close(fi.fh)
            else:
                with self.guard:
                    self.reading.pop(fi.fh, None)
            return 0

        @oserror
        def unlink(self, path: str) -> int:
            os.unlink(state.real(path))
            state.forget(path)
            return 0

        @oserror
        def rename(self, old: str, new: str) -> int:
            existed = os.path.lexists(state.real(new))
            at("rename", "before", new, existed)
            os.rename(state.real(old), state.real(new))
            state.rename(old, new)
            at("rename", "after", new, existed)
            return 0

        @oserror
        def mkdir(self, path: str, mode: int) -> int:
            os.mkdir(state.real(path), mode)
            return 0

        @oserror
        def rmdir(self, path: str) -> int:
            os.rmdir(state.real(path))
            return 0

        @oserror
        def readdir(self, path: str, fh: Any) -> list[str]:
            return [".", "..", *os.listdir(state.real(path))]

        @oserror
        def access(self, path: str, amode: int) -> int:
            if path != CONTROL and not os.access(state.real(path), amode):
                raise fuse.FuseOSError(errno.EACCES)
            return 0

        @oserror
        def chmod(self, path: str, mode: int) -> int:
            os.chmod(state.real(path), mode)
            return 0

        @oserror
        def utimens(self, path: str, times: Any = None) -> int:
            if path != CONTROL:
                os.utime(state.real(path), ns=times)
            return 0

        @oserror
        def statfs(self, path: str) -> dict[str, Any]:
            st = os.statvfs(state.backing)
            return {
                k: getattr(st, k)
                for k in (
                    "f_bavail",
                    "f_bfree",
                    "f_blocks",
                    "f_bsize",
                    "f_favail",
                    "f_ffree",
                    "f_files",
                    "f_flag",
                    "f_frsize",
                    "f_namemax",
                )
            }

        def destroy(self, path: str) -> None:
            state.sync_all()  # unmounting is a clean shutdown

    return LazyOps()


def main(argv: list[str]) -> int:  # pragma: no cover - runs as the daemon
    """Mount ``BACKING`` at ``MOUNTPOINT`` in the foreground until unmounted."""
    if len(argv) not in (2, 3):
        print("usage: python -m sealcheck.infra.lazyfs BACKING MOUNTPOINT [OWNER]", file=sys.stderr)
        return 2
    backing, mountpoint = argv[:2]
    owner = argv[2] if len(argv) == 3 else ""  # named in the mount's source, for cleanup
    import mfusepy as fuse

    state = LazyState(backing)
    fuse.FUSE(
        _operations(state),
        mountpoint,
        raw_fi=True,
        foreground=True,
        nothreads=False,  # a held call must not stall the mount (crash_points' ``hold``)
        fsname=f"{FSNAME}@{owner}" if owner else FSNAME,
        subtype=FSNAME,
        attr_timeout=0,
        entry_timeout=0,
        negative_timeout=0,
    )
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
