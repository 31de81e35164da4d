"""A FUSE filesystem that loses un-fsynced writes on command (the daemon; Jepsen's lazyfs, in
Python on ``mfusepy`` and libfuse 3).

It mirrors a *backing* directory at a mount point. File contents written through the mount
are kept apart, page by page (4 KiB, like the kernel's page cache), in the daemon's memory
until the file is fsynced: then they go to the backing file, which is fsynced too. Reads see
the backing file with the kept pages on top, so every process sees what was written, as on a
real machine. Writing ``drop`` to the control file ``/.lazyfs`` throws every kept page away —
what a power cut does to a page cache — and ``sync`` writes them all (what a clean shutdown
does); ``arm {...}`` arms a crash point (:mod:`sealcheck.infra.crash_points`: the writer's
process group SIGKILLed inside its k-th fsync or rename of a file) and ``disarm`` disarms it;
reading the control file gives JSON counters: what is kept now, what was dropped, which crash
point is armed and which fired.

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
from dataclasses import dataclass, field
from typing import Any

from sealcheck.infra.crash_points import CrashPoints

PAGE = 4096
CONTROL = "/.lazyfs"  # write "drop", "sync", "arm {...}" or "disarm"; read the counters
FSNAME = "sealcheck-lazyfs"
#: name endings of memory-mapped files that are written straight through, never kept or lost
PASSTHROUGH = ("-shm", ".index", ".timeindex")


@dataclass
class Kept:
    """The un-fsynced state of one file: its dirty pages, its size as written, and ``floor``,
    the smallest size it was truncated to since its last fsync (backing bytes past the floor
    are gone for readers: a file cut short and extended again reads zeros there)."""

    size: int
    floor: int
    pages: dict[int, bytes] = field(default_factory=dict)


class LazyState:
    """The page-level bookkeeping, independent of FUSE (unit-tested on plain files)."""

    def __init__(self, backing: str) -> None:
        self.backing = os.path.abspath(backing)
        self.kept: dict[str, Kept] = {}
        self.dropped_bytes = 0
        self.dropped_files = 0
        self.drops = 0
        self.synced_bytes = 0
        self.lock = threading.RLock()

    def real(self, path: str) -> str:
        """The backing file of mount path ``path``."""
        return os.path.join(self.backing, path.lstrip("/"))

    @staticmethod
    def passthrough(path: str) -> bool:
        """Files written straight through (never lost): memory-mapped indexes that their
        owner rebuilds after a crash (:data:`PASSTHROUGH`)."""
        return path.endswith(PASSTHROUGH)

    def _durable_size(self, path: str) -> int:
        try:
            return os.stat(self.real(path)).st_size
        except FileNotFoundError:
            return 0

    def _keep(self, path: str) -> Kept:
        """The kept state of ``path``, started from its durable size on its first write."""
        kept = self.kept.get(path)
        if kept is None:
            size = self._durable_size(path)
            kept = self.kept[path] = Kept(size, floor=size)
        return kept

    def size(self, path: str) -> int:
        """The size every reader sees."""
        kept = self.kept.get(path)
        return kept.size if kept is not None else self._durable_size(path)

    def _page(self, path: str, n: int, fd: int) -> bytes:
        kept = self.kept.get(path)
        if kept is not None and n in kept.pages:
            return kept.pages[n]
        data = os.pread(fd, PAGE, n * PAGE)
        limit = self.size(path) - n * PAGE  # bytes of this page inside the visible size
        backed = limit if kept is None else min(limit, kept.floor - n * PAGE)
        data = data[: max(0, backed)]
        return data.ljust(min(PAGE, max(0, limit)), b"\0")

    def read(self, path: str, fd: int, size: int, offset: int) -> bytes:
        """``size`` bytes at ``offset`` as written (kept pages over the backing file)."""
        with self.lock:
            if self.passthrough(path) or path not in self.kept:
                return os.pread(fd, size, offset)
            end = min(offset + size, self.size(path))
            out = bytearray()
            pos = offset
            while pos < end:
                n, within = divmod(pos, PAGE)
                page = self._page(path, n, fd).ljust(PAGE, b"\0")
                take = min(PAGE - within, end - pos)
                out += page[within : within + take]
                pos += take
            return bytes(out)

    def write(self, path: str, fd: int, data: bytes, offset: int) -> int:
        """Keep ``data`` at ``offset`` (straight through for pass-through files)."""
        with self.lock:
            if self.passthrough(path):
                return os.pwrite(fd, data, offset)
            kept = self._keep(path)
            pos, view = offset, memoryview(data)
            while view:
                n, within = divmod(pos, PAGE)
                page = bytearray(self._page(path, n, fd).ljust(PAGE, b"\0"))
                take = min(PAGE - within, len(view))
                page[within : within + take] = view[:take]
                kept.pages[n] = bytes(page)
                pos, view = pos + take, view[take:]
            kept.size = max(kept.size, offset + len(data))
            return len(data)

    def truncate(self, path: str, fd: int, length: int) -> None:
        """Keep the new size (pages past it are forgotten, the last one zero-filled)."""
        with self.lock:
            if self.passthrough(path):
                os.ftruncate(fd, length)
                return
            kept = self._keep(path)
            n, within = divmod(length, PAGE)
            if within:
                page = bytearray(self._page(path, n, fd).ljust(PAGE, b"\0"))
                page[within:] = bytes(PAGE - within)
                kept.pages[n] = bytes(page)
            kept.pages = {k: v for k, v in kept.pages.items() if k < n or (k == n and within)}
            kept.size = length
            kept.floor = min(kept.floor, length)

    def fsync(self, path: str, fd: int) -> None:
        """Write the kept pages of ``path`` to its backing file and fsync it."""
        with self.lock:
            kept = self.kept.pop(path, None)
            if kept is not None:
                os.ftruncate(fd, min(kept.floor, os.fstat(fd).st_size))  # what was cut is gone
                for n, page in sorted(kept.pages.items()):
                    valid = min(PAGE, kept.size - n * PAGE)
                    if valid > 0:
                        os.pwrite(fd, page[:valid], n * PAGE)
                        self.synced_bytes += valid
                os.ftruncate(fd, kept.size)
            os.fsync(fd)

    def sync_all(self) -> int:
        """fsync every file with kept pages (a clean shutdown); how many files."""
        with self.lock:
            paths = list(self.kept)
            for path in paths:
                try:
                    fd = os.open(self.real(path), os.O_RDWR)
                except FileNotFoundError:
                    self.kept.pop(path, None)
                    continue
                try:
                    self.fsync(path, fd)
                finally:
                    os.close(fd)
            return len(paths)

    def drop(self) -> dict[str, Any]:
        """Forget every kept page (a power cut): what was lost."""
        with self.lock:
            lost = {p: sum(len(v) for v in k.pages.values()) for p, k in self.kept.items()}
            self.kept.clear()
            self.drops += 1
            self.dropped_files += len(lost)
            self.dropped_bytes += sum(lost.values())
            return {"files": len(lost), "bytes": sum(lost.values()), "paths": sorted(lost)}

    def forget(self, path: str) -> None:
        """``path`` was removed: its kept pages go with it."""
        with self.lock:
            self.kept.pop(path, None)

    def rename(self, old: str, new: str) -> None:
        """``old`` became ``new``: its kept pages follow it."""
        with self.lock:
            kept = self.kept.pop(old, None)
            self.kept.pop(new, None)
            if kept is not None:
                self.kept[new] = kept

    def counters(self) -> dict[str, Any]:
        """What is kept now and what drops lost so far."""
        with self.lock:
            return {
                "kept_files": len(self.kept),
                "kept_bytes": sum(len(v) for k in self.kept.values() for v in k.pages.values()),
                "drops": self.drops,
                "dropped_files": self.dropped_files,
                "dropped_bytes": self.dropped_bytes,
                "synced_bytes": self.synced_bytes,
            }


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

    class LazyOps(fuse.Operations):  # type: ignore[misc]
        use_ns = True

        def __init__(self) -> None:
            self.control_reply = b""  # the last command's reply, for the next read
            self.reading = b""  # what reads of the control file opened last return

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
                fi.fh, fi.direct_io = 0, 1
                if fi.flags & os.O_ACCMODE == os.O_RDONLY:
                    fresh = json.dumps({**state.counters(), **crashes.counters()}).encode()
                    self.reading, self.control_reply = self.control_reply or fresh, b""
                return 0
            # read-write whatever was asked: pages are read back to be patched, and fsync
            # writes them through whichever descriptor it is called on
            fd = os.open(state.real(path), os.O_RDWR)
            if fi.flags & os.O_TRUNC:
                state.truncate(path, fd, 0)
            return self._open(path, fi, fd)

        @oserror
        def create(self, path: str, mode: int, fi: Any) -> int:
            fd = os.open(state.real(path), os.O_RDWR | os.O_CREAT, mode)
            return self._open(path, fi, fd)

        @oserror
        def read(self, path: str, size: int, offset: int, fi: Any) -> bytes:
            if path == CONTROL:
                return self.reading[offset : offset + size]
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
                elif command == "disarm":
                    reply = {"disarmed": crashes.disarm(), **crashes.counters()}
                else:
                    raise fuse.FuseOSError(errno.EINVAL)
                self.control_reply = json.dumps(reply).encode()
                return len(data)
            return state.write(path, fi.fh, data, offset)

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
                state.fsync(path, fi.fh)
                crashes.passed("fsync", path, fuse.fuse_get_context()[2])
            return 0

        def flush(self, path: str, fi: Any) -> int:
            return 0

        @oserror
        def release(self, path: str, fi: Any) -> int:
            if path != CONTROL:
                os.close(fi.fh)
            return 0

        @oserror
        def unlink(self, path: str) -> int:
            os.unlink(state.real(path))
            state.forget(path)
            return 0

        @oserror
        def rename(self, old: str, new: str) -> int:
            os.rename(state.real(old), state.real(new))
            state.rename(old, new)
            crashes.passed("rename", new, fuse.fuse_get_context()[2])
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
        nothreads=True,
        fsname=f"{FSNAME}@{owner}" if owner else FSNAME,
        subtype=FSNAME,
        attr_timeout=0,
        entry_timeout=0,
        negative_timeout=0,
    )
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
