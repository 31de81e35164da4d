"""Crash points at durability boundaries (:mod:`sealcheck.infra.crash_points`), in the lazy
filesystem mounted for real (FUSE): a writer in its own process group is SIGKILLed inside its
k-th fsync of its SQLite WAL — after that commit is durable, before the next one — and inside
its k-th rename of a checkpoint-like ``commits/N``; the harness's own fsyncs are spared."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from sealcheck.infra.lazy_disk import LazyDisk

pytestmark = pytest.mark.integration

#: one transaction per commit, WAL with synchronous=FULL: one WAL fsync each; then a
#: checkpoint's commits/N by rename, as Spark writes them
WRITER = textwrap.dedent(
    """
    import os, sqlite3, sys
    root = sys.argv[1]
    db = sqlite3.connect(f"{root}/x.db", isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute("CREATE TABLE IF NOT EXISTS t (x INTEGER)")
    os.makedirs(f"{root}/commits", exist_ok=True)
    print("ready", flush=True)
    sys.stdin.readline()  # armed
    for i in range(50):
        db.execute("INSERT INTO t VALUES (?)", (i,))
        open(f"{root}/commits/.{i}.tmp", "w").close()
        os.rename(f"{root}/commits/.{i}.tmp", f"{root}/commits/{i}")
    print("never killed", flush=True)
    """
)


@pytest.fixture
def disk(tmp_path: Path):
    d = LazyDisk(tmp_path / "durable", tmp_path / "mnt", tmp_path / "lazyfs.log")
    d.start()
    yield d
    d.stop()


def _run(disk: LazyDisk, op: str, k: int, path: str = "") -> tuple[int, dict]:
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(disk.mountpoint)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stdin is not None
    assert proc.stdout.readline().strip() == "ready"
    disk.arm_crash(op, k, path)
    proc.stdin.write("go\n")
    proc.stdin.flush()
    code = proc.wait(60)
    [crash] = disk.counters()["crashes"]
    return code, crash


def test_a_writer_dies_inside_its_kth_wal_fsync_with_that_commit_durable(disk: LazyDisk):
    code, crash = _run(disk, "fsync", 3, r"x\.db-wal$")
    assert code == -9  # SIGKILL, from inside the call
    assert crash["op"] == "fsync" and crash["k"] == 3 and crash["path"] == "/x.db-wal"
    db = sqlite3.connect(disk.mountpoint / "x.db")
    assert db.execute("SELECT COUNT(*) FROM t").fetchone() == (3,)  # the third commit is in
    db.close()
    # commits/0 and /1 were renamed; the third transaction's rename never happened
    assert sorted(os.listdir(disk.mountpoint / "commits")) == ["0", "1"]


def test_a_writer_dies_inside_its_kth_rename_of_one_kind_of_file(disk: LazyDisk):
    code, crash = _run(disk, "rename", 2)
    assert code == -9 and crash["path"] == "/commits/1" and crash["k"] == 2
    db = sqlite3.connect(disk.mountpoint / "x.db")
    assert db.execute("SELECT COUNT(*) FROM t").fetchone() == (2,)
    db.close()
    assert disk.counters()["crash_armed"] is None  # it fires once


def test_the_harness_own_writes_are_spared(disk: LazyDisk):
    disk.arm_crash("fsync", 1)
    with open(disk.mountpoint / "mine", "w") as f:  # the harness's process group
        f.write("x")
        f.flush()
        os.fsync(f.fileno())
    assert disk.counters()["crashes"] == [] and disk.disarm_crash()["disarmed"] is True


#: a checkpoint written as Spark writes it: each file to a temporary name, then renamed into
#: place; commits/N follows offsets/N by a millisecond (a window no watcher can hit)
CHECKPOINT = textwrap.dedent(
    """
    import os, sys, time
    root = sys.argv[1]
    for d in ("offsets", "commits"):
        os.makedirs(f"{root}/checkpoint/{d}", exist_ok=True)
    print("ready", flush=True)
    for n in range(10_000):
        for d in ("offsets", "commits"):
            open(f"{root}/checkpoint/{d}/.{n}.tmp", "w").close()
            os.rename(f"{root}/checkpoint/{d}/.{n}.tmp", f"{root}/checkpoint/{d}/{n}")
            time.sleep(0.001)
        time.sleep(0.05)
    """
)


def test_the_window_nemesis_hits_a_millisecond_window_from_below(disk: LazyDisk):
    from sealcheck.core.roles import SUT, Role
    from sealcheck.core.windows import streaming_windows
    from sealcheck.nemeses.api import Action, PlanInfo
    from sealcheck.nemeses.window import CrashInWindow

    proc = subprocess.Popen([sys.executable, "-c", CHECKPOINT, str(disk.mountpoint)],
                            stdout=subprocess.PIPE, text=True, start_new_session=True)  # fmt: skip
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"

    class Target:
        def nodes(self, role):
            return []

        def windows(self):
            return streaming_windows()

        def files(self):
            return disk.mountpoint

        def disks(self):
            return {"store": disk}

        def sealed(self):
            return 0

    windows = tuple(streaming_windows())
    nemesis = CrashInWindow(PlanInfo(roles={SUT.name: Role(SUT.name)}, windows=windows))
    action = Action(0.0, "window", "crash-in-window", {"window": "after-offsets", "skip": 2})
    try:
        assert "in the filesystem" in nemesis.invoke(action, Target())["watching"]
        done = nemesis.resolve(action, Target(), 0.0)
    finally:
        proc.kill()
    assert proc.wait(10) == -9
    assert done["crashed"]["path"] == f"/checkpoint/offsets/{done['opened_by']}"
    assert done["effect"]["effect"] is True, done  # commits/N was not there: inside
    n = int(done["opened_by"])
    assert not (disk.mountpoint / "checkpoint" / "commits" / str(n)).exists()
