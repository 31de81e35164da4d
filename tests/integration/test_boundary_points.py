"""Points at a commit boundary, in the lazy filesystem mounted for real (FUSE): a writer that
commits a row to SQLite and then renames its ``commits/N`` into place, as a Structured
Streaming job commits its sink and then its checkpoint, is

* killed *before* its k-th rename into ``commits/``: the k-th row is committed and its
  ``commits/N`` never lands (the replay window of any sink, hit every time);
* failed with ``ENOSPC`` at a rename: the writer sees errno 28 and goes on;
* held at a rename: while it waits, the control file, another process's writes and fsyncs on
  the mount, and reads of the writer's database (an observer's) all go on (only the renamed
  file's directory is locked, by the kernel, until the call is answered); killed while held
  and released, its rename is never done; released while alive, it is done and the writer
  finishes."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sealcheck.infra.lazy_disk import LazyDisk

pytestmark = pytest.mark.integration

WRITER = textwrap.dedent(
    """
    import os, sqlite3, sys
    root = sys.argv[1]
    db = sqlite3.connect(f"{root}/x.db", isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE IF NOT EXISTS t (x INTEGER)")
    os.makedirs(f"{root}/commits", exist_ok=True)
    print("ready", flush=True)
    sys.stdin.readline()  # armed
    for i in range(20):
        db.execute("INSERT INTO t VALUES (?)", (i,))  # the sink's commit
        open(f"{root}/commits/.{i}.tmp", "w").close()
        try:
            os.rename(f"{root}/commits/.{i}.tmp", f"{root}/commits/{i}")  # the checkpoint's
        except OSError as exc:
            print(f"rename {i} failed: errno {exc.errno}", flush=True)
    print("done", flush=True)
    """
)


#: the writers a test started, killed when it ends however it ends
STARTED: list[subprocess.Popen[str]] = []


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[LazyDisk]:
    d = LazyDisk(tmp_path / "durable", tmp_path / "mnt", tmp_path / "lazyfs.log")
    d.start()
    try:
        yield d
    finally:
        d.disarm_crash()  # a held call is let go, so its writer can die
        while STARTED:
            proc = STARTED.pop()
            if proc.poll() is None:
                os.killpg(proc.pid, 9)
                proc.wait(30)
        d.stop()


def _start(disk: LazyDisk, **point: object) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(disk.mountpoint)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    STARTED.append(proc)
    assert proc.stdout is not None and proc.stdin is not None
    assert proc.stdout.readline().strip() == "ready"
    disk.arm_crash("rename", 3, r"^/commits/\d+$", **point)  # type: ignore[arg-type]
    proc.stdin.write("go\n")
    proc.stdin.flush()
    return proc


def _rows(disk: LazyDisk) -> int:
    db = sqlite3.connect(disk.mountpoint / "x.db")
    try:
        return int(db.execute("SELECT COUNT(*) FROM t").fetchone()[0])
    finally:
        db.close()


def _commits(disk: LazyDisk) -> list[str]:
    """The ``commits/N`` in place, read in the backing directory: while a rename into
    ``commits/`` is held, the kernel keeps that directory locked for the mount's readers."""
    return sorted((n for n in os.listdir(disk.backing / "commits") if n.isdigit()), key=int)


def _held(disk: LazyDisk) -> dict[str, object]:
    deadline = time.monotonic() + 60
    while (held := disk.counters()["holding"]) is None:
        assert time.monotonic() < deadline, "the rename was never held"
        time.sleep(0.01)
    return dict(held)


def test_a_kill_before_the_checkpoint_commit_leaves_the_sink_committed_and_commits_n_absent(
    disk: LazyDisk,
) -> None:
    proc = _start(disk, when="before")
    assert proc.wait(60) == -9
    [crash] = disk.counters()["crashes"]
    assert crash["when"] == "before" and crash["path"] == "/commits/2" and crash["do"] == "kill"
    assert _rows(disk) == 3  # batch 2's sink commit happened ...
    assert _commits(disk) == ["0", "1"]  # ... and its commits/2 never did: a restart replays it
    assert (disk.mountpoint / "commits" / ".2.tmp").exists()


def test_a_failed_rename_answers_enospc_and_the_writer_goes_on(disk: LazyDisk) -> None:
    proc = _start(disk, when="before", do="fail", errno="ENOSPC")
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0 and "rename 2 failed: errno 28" in out and "done" in out
    assert "2" not in _commits(disk) and len(_commits(disk)) == 19 and _rows(disk) == 20
    [crash] = disk.counters()["crashes"]
    assert crash["do"] == "fail" and crash["errno"] == "ENOSPC"


def test_while_a_rename_is_held_the_mount_serves_everyone_else_and_a_dead_callers_is_dropped(
    disk: LazyDisk,
) -> None:
    proc = _start(disk, when="before", do="hold")
    held = _held(disk)
    assert held["path"] == "/commits/2" and proc.poll() is None
    # the observer reads the writer's database; another process writes and fsyncs a file
    assert _rows(disk) == 3
    other = subprocess.run(
        [sys.executable, "-c", "import os,sys; f=open(sys.argv[1],'w'); f.write('x'); "
         "f.flush(); os.fsync(f.fileno()); f.close(); print(open(sys.argv[1]).read())",
         str(disk.mountpoint / "other")],
        capture_output=True, text=True, timeout=30, start_new_session=True,
    )  # fmt: skip
    assert other.returncode == 0 and other.stdout.strip() == "x"
    assert disk.counters()["holding"] is not None  # the control file answers meanwhile
    os.killpg(proc.pid, 9)  # the job is killed while its checkpoint commit is held: it dies
    assert disk.release()["released"] is True  # once the call is answered (the kernel waits)
    assert proc.wait(30) == -9
    deadline = time.monotonic() + 30
    while disk.counters()["holding"] is not None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert disk.counters()["crashes"][0].get("caller_died") is True
    assert _commits(disk) == ["0", "1"] and _rows(disk) == 3  # the dead caller's rename: never


def test_a_held_rename_released_while_its_caller_lives_is_done(disk: LazyDisk) -> None:
    proc = _start(disk, when="before", do="hold")
    _held(disk)
    assert _commits(disk) == ["0", "1"]
    disk.release()
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0 and "done" in out and "failed" not in out
    assert len(_commits(disk)) == 20 and _rows(disk) == 20


#: a checkpoint written as Spark writes it (each file to a temporary name, renamed into
#: place), a row committed to the sink between a batch's offsets/N and its commits/N
STREAM = textwrap.dedent(
    """
    import os, sqlite3, sys, time
    from concurrent.futures import ThreadPoolExecutor
    root, in_thread = sys.argv[1], sys.argv[2:] == ["thread"]
    db = sqlite3.connect(f"{root}/sink.db", isolation_level=None, check_same_thread=False)
    if sys.argv[2:] == ["wal"]:  # a commit is then one fsync of sink.db-wal
        db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE IF NOT EXISTS t (batch INTEGER)")
    writer = ThreadPoolExecutor(1)  # the mistake: the batch's write handed over, not awaited
    for d in ("offsets", "commits"):
        os.makedirs(f"{root}/checkpoint/{d}", exist_ok=True)
    print("ready", flush=True)
    for n in range(10_000):
        open(f"{root}/checkpoint/offsets/.{n}.tmp", "w").close()
        os.rename(f"{root}/checkpoint/offsets/.{n}.tmp", f"{root}/checkpoint/offsets/{n}")
        if in_thread:
            writer.submit(db.execute, "INSERT INTO t VALUES (?)", (n,))
        else:
            try:
                db.execute("INSERT INTO t VALUES (?)", (n,))
            except sqlite3.Error as exc:  # a correct job fails its batch: no commits/N
                print(f"batch {n} failed: {exc}", flush=True)
                sys.exit(3)
        tmp = f"{root}/checkpoint/commits/.{n}.{os.getpid()}-{n}.tmp"  # as Spark names it
        try:
            with open(tmp, "w") as fh:
                fh.write("v1")
        except OSError as exc:  # a correct job fails its batch: no commits/N
            print(f"batch {n} checkpoint failed: errno {exc.errno}", flush=True)
            sys.exit(4)
        os.rename(tmp, f"{root}/checkpoint/commits/{n}")
        time.sleep(0.02)
    """
)


def _boundary(disk: LazyDisk, name: str, *mode: str) -> dict[str, Any]:
    """Run the stream (``mode``: ``thread``) under one ``boundary`` action; what it did."""
    from sealcheck.core.roles import SUT, Role
    from sealcheck.core.windows import boundaries, streaming_windows
    from sealcheck.nemeses.api import Action, PlanInfo
    from sealcheck.nemeses.boundary import CrashAtBoundary

    proc = subprocess.Popen([sys.executable, "-c", STREAM, str(disk.mountpoint), *mode],
                            stdout=subprocess.PIPE, text=True, start_new_session=True)  # fmt: skip
    STARTED.append(proc)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"

    class Target:
        def nodes(self, role: str) -> list[object]:
            return []

        def windows(self) -> object:
            return streaming_windows()

        def files(self) -> Path:
            return disk.mountpoint

        def disks(self) -> dict[str, LazyDisk]:
            return {"store": disk}

        def sealed(self) -> int:
            return 0

    found = tuple(boundaries(streaming_windows()))
    nemesis = CrashAtBoundary(PlanInfo(roles={SUT.name: Role(SUT.name)}, boundaries=found))
    action = Action(0.0, "boundary", "crash-at-boundary", {"boundary": name, "skip": 2})
    try:
        assert nemesis.invoke(action, Target())["outcome"] == "pending"  # type: ignore[arg-type]
        done = nemesis.resolve(action, Target(), 0.0)  # type: ignore[arg-type]
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(60)  # killed in its call, or (full) failing its batch and exiting 3
    finally:
        proc.kill()
    done["exit"] = proc.wait(10)
    done["out"] = proc.stdout.read()
    done["nemesis"] = nemesis  # for its findings
    assert done["outcome"] == "happened" and done["effect"]["effect"] is True, done
    return done


def _last_batch(disk: LazyDisk) -> int:
    """The newest batch in the sink (-1: none)."""
    db = sqlite3.connect(disk.mountpoint / "sink.db")
    try:
        top = db.execute("SELECT MAX(batch) FROM t").fetchone()[0]
        return -1 if top is None else int(top)
    finally:
        db.close()


def test_the_boundary_nemesis_kills_after_the_sinks_commit_before_commits_n(
    disk: LazyDisk,
) -> None:
    done = _boundary(disk, "after-offsets:closing")
    assert done["exit"] == -9
    n = int(str(done["crashed"]["path"]).rsplit("/", 1)[1])
    checkpoint = disk.backing / "checkpoint"
    assert (checkpoint / "offsets" / str(n)).exists()  # the batch was planned ...
    assert not (checkpoint / "commits" / str(n)).exists()  # ... and its commit never written
    assert _last_batch(disk) == n  # ... but its sink's was


@pytest.mark.parametrize("mode", ["awaited", "thread"])
def test_just_after_commits_n_a_write_not_awaited_is_in_flight(disk: LazyDisk, mode: str) -> None:
    """The batch's first sink write after each commits/N waits 1 s: a job that awaits it
    is slower and loses nothing; one that handed it to a thread loses batch N's row while its
    commits/N says the batch is done (a restart never redoes it)."""
    done = _boundary(disk, "after-offsets:closed", *(["thread"] if mode == "thread" else []))
    n = int(str(done["crashed"]["path"]).rsplit("/", 1)[1])
    assert (disk.backing / "checkpoint" / "commits" / str(n)).exists()
    assert done["crashed"]["slowed_writes"] >= 1
    if mode == "thread":  # batch n's row (and the ones queued before it) never landed
        assert _last_batch(disk) < n
    else:
        assert _last_batch(disk) == n


def test_committed_kills_inside_the_sinks_first_commit_after_offsets_n(disk: LazyDisk) -> None:
    """With SQLite in WAL mode, a commit is one fsync of its ``-wal``: the kill lands just
    after the batch's sink commit, long before its ``commits/N``."""
    done = _boundary(disk, "after-offsets:committed", "wal")
    crash = done["crashed"]
    assert done["exit"] == -9 and crash["op"] == "fsync" and crash["path"] == "/sink.db-wal"
    n = int(str(crash["after"]).rsplit("/", 1)[1])
    assert crash["after"] == f"/checkpoint/offsets/{n}" and n >= 2  # the 3rd since arming
    checkpoint = disk.backing / "checkpoint"
    assert not (checkpoint / "commits" / str(n)).exists()  # batch n not recorded ...
    assert _last_batch(disk) == n  # ... its sink committed: a restart replays it


def test_full_fails_the_sinks_first_write_after_offsets_n_with_enospc(disk: LazyDisk) -> None:
    done = _boundary(disk, "after-offsets:full")
    crash = done["crashed"]
    n = int(str(crash["after"]).rsplit("/", 1)[1])
    assert crash["do"] == "fail" and crash["errno"] == "ENOSPC" and crash["op"] == "write"
    assert done["exit"] == 3 and f"batch {n} failed: database or disk is full" in done["out"]
    assert _last_batch(disk) == n - 1  # the batch never reached the sink ...
    assert not (disk.backing / "checkpoint" / "commits" / str(n)).exists()  # nor was recorded


def test_unwritable_fails_the_write_of_commits_n_with_eio_after_the_sink_committed(
    disk: LazyDisk,
) -> None:
    """A disk that breaks under the checkpoint: the job's batch is in its sink, its
    ``commits/N`` cannot be written; a correct job fails the batch (a restart replays it)."""
    done = _boundary(disk, "after-offsets:unwritable")
    crash = done["crashed"]
    n = int(str(crash["path"]).split("/")[-1].split(".")[1])
    assert crash["do"] == "fail" and crash["errno"] == "EIO" and crash["op"] == "write"
    assert done["exit"] == 4 and f"batch {n} checkpoint failed: errno 5" in done["out"]
    assert n >= 2 and _last_batch(disk) == n  # the 3rd since arming; its sink committed ...
    assert not (disk.backing / "checkpoint" / "commits" / str(n)).exists()  # ... not recorded
    assert "failed with EIO" in done["effect"]["evidence"]


#: a restarted stream's replay of batch n: the sink written again (``redo``) or not (``skip``,
#: the job's own marker found), then ``commits/n`` renamed into place
REPLAY = textwrap.dedent(
    """
    import os, sqlite3, sys
    root, n, how = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    db = sqlite3.connect(f"{root}/sink.db", isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    if how == "redo":
        db.execute("INSERT INTO t VALUES (?)", (n,))
    open(f"{root}/checkpoint/commits/.{n}.tmp", "w").close()
    os.rename(f"{root}/checkpoint/commits/.{n}.tmp", f"{root}/checkpoint/commits/{n}")
    """
)


@pytest.mark.parametrize("how", ["skip", "redo"])
def test_after_a_kill_before_commits_n_the_replay_is_watched(disk: LazyDisk, how: str) -> None:
    """The boundary nemesis watches the restarted job's sink commits until its commits/N:
    none when the job skips what it had applied, one when it applies the batch again."""
    done = _boundary(disk, "after-offsets:closing", "wal")
    n = done["replays"]
    assert done["exit"] == -9 and not (disk.backing / "checkpoint" / "commits" / str(n)).exists()
    replay = subprocess.run([sys.executable, "-c", REPLAY, str(disk.mountpoint), str(n), how],
                            timeout=60, start_new_session=True, check=False)  # fmt: skip
    assert replay.returncode == 0
    [watch] = disk.counters()["watches"]
    assert watch["done"] is True and watch["commits"] == (1 if how == "redo" else 0), watch
    assert watch["until"] == f"^/checkpoint/commits/{n}$"

    class Target:
        def disks(self) -> dict[str, LazyDisk]:
            return {"store": disk}

    found = done["nemesis"].findings(Target())
    assert found == [{"replayed": n, "sink_commits": watch["commits"], "done": True}]
