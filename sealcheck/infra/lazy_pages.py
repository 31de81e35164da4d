"""The lazy filesystem's page bookkeeping, independent of FUSE (:class:`LazyState`): file
contents kept page by page until fsynced, dropped at a power cut, written at a clean shutdown
(the daemon that serves it: :mod:`sealcheck.infra.lazyfs`)."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from typing import Any

PAGE = 4096
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
