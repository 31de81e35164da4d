"""The lazy filesystem mounted for real (FUSE) under a SQLite store written by another
process: a drop loses what was committed without fsync and keeps what was fsynced; the mount a
dead harness left is found and unmounted."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from sealcheck.infra.lazy_disk import LazyDisk, _mounted, stale_mounts, unmount

pytestmark = pytest.mark.integration

WRITER = textwrap.dedent(
    """
    import os, sqlite3, sys
    db = sqlite3.connect(sys.argv[1], isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE IF NOT EXISTS t (x INTEGER)")
    db.execute("PRAGMA synchronous=FULL")
    for i in range(100):
        db.execute("INSERT INTO t VALUES (?)", (i,))
    db.execute("PRAGMA synchronous=OFF")  # the non-durable-commits bug from here on
    for i in range(100, 160):
        db.execute("INSERT INTO t VALUES (?)", (i,))
    print("committed", flush=True)
    os.kill(os.getpid(), 19)  # SIGSTOP: frozen, like the nemesis freezes an incarnation
    """
)


def _count(db: Path) -> tuple[int, int]:
    con = sqlite3.connect(db)
    try:
        n, top = con.execute("SELECT COUNT(*), MAX(x) FROM t").fetchone()
        assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        return int(n), int(top)
    finally:
        con.close()


def test_a_drop_loses_unsynced_commits_and_keeps_fsynced_ones(tmp_path: Path) -> None:
    disk = LazyDisk(tmp_path / "durable", tmp_path / "mnt", tmp_path / "lazyfs.log")
    disk.start()
    try:
        assert _mounted(tmp_path / "mnt")
        writer = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(tmp_path / "mnt" / "t.db")],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert writer.stdout is not None and writer.stdout.readline().strip() == "committed"
        while Path(f"/proc/{writer.pid}/stat").read_text().split(")")[1].split()[0] != "T":
            time.sleep(0.01)
        assert _count(tmp_path / "mnt" / "t.db") == (160, 159)  # everyone sees the page cache
        before = disk.counters()
        assert before["kept_bytes"] > 0, before  # the OFF commits are not on disk yet
        lost = disk.drop()
        writer.send_signal(signal.SIGKILL)
        writer.wait()
        assert lost["dropped"]["bytes"] == before["kept_bytes"] and lost["kept_bytes"] == 0
        assert any(p.endswith("-wal") for p in lost["dropped"]["paths"]), lost
        # what was fsynced survives; what was committed without fsync is gone
        assert _count(tmp_path / "mnt" / "t.db") == (100, 99)
    finally:
        disk.stop()
    assert not _mounted(tmp_path / "mnt")
    assert _count(tmp_path / "durable" / "t.db") == (100, 99)  # the backing holds it all


def test_relative_paths_mount_and_a_stop_writes_every_kept_page_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``sealcheck run --runs runs-soak`` hands relative paths down to the lazy disk; and a
    stop is a clean shutdown: the daemon writes what it kept back after the kernel has dropped
    the mount, and is not terminated before it is done (4 MB kept: terminating at once lost
    them every time)."""
    monkeypatch.chdir(tmp_path)
    disk = LazyDisk(Path("durable"), Path("mnt"), Path("lazyfs.log"))
    disk.start(timeout_s=60)
    try:
        assert _mounted(tmp_path / "mnt")
        for i in range(20):
            (Path("mnt") / f"x{i}").write_bytes(bytes([i]) * 200_000)
        assert disk.counters()["kept_bytes"] >= 20 * 200_000  # none of it on disk yet
    finally:
        disk.stop()
    assert not _mounted(tmp_path / "mnt")
    for i in range(20):
        assert (tmp_path / "durable" / f"x{i}").read_bytes() == bytes([i]) * 200_000, i


def test_the_mount_of_a_dead_harness_is_unmounted_by_cleanup(tmp_path: Path) -> None:
    harness = textwrap.dedent(
        f"""
        import time
        from pathlib import Path
        from sealcheck.infra.lazy_disk import LazyDisk
        LazyDisk(Path({str(tmp_path / "d")!r}), Path({str(tmp_path / "m")!r}),
                 Path({str(tmp_path / "log")!r})).start()
        print("mounted", flush=True)
        time.sleep(600)
        """
    )
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen(
        [sys.executable, "-c", harness], cwd=root, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "mounted"
    assert not [m for m in stale_mounts() if m.mountpoint == str(tmp_path / "m")]  # alive
    proc.kill()  # the harness dies; its daemon dies with it; the mount stays, disconnected
    proc.wait()
    deadline = time.monotonic() + 30
    while not [m for m in stale_mounts() if m.mountpoint == str(tmp_path / "m")]:
        assert time.monotonic() < deadline, "the dead harness's mount was never seen as stale"
        time.sleep(0.1)
    assert unmount(tmp_path / "m")  # what a sweep of its archive does
    assert not _mounted(tmp_path / "m")
