"""Crash points' bookkeeping (:mod:`sealcheck.infra.crash_points`), without a mount: what
counts, per kind of file, and whom it never kills (the real kill: the integration test
``test_crash_at_sync``)."""

from __future__ import annotations

import errno
import os
import subprocess
import sys

import pytest

from sealcheck.infra.crash_points import CrashPoint, CrashPoints


def test_a_bad_spec_is_named():
    for doc, word in (
        ({"op": "unlink", "k": 1}, "op 'unlink'"),
        ({"op": "fsync", "k": 0}, "k 0"),
        ({"op": "fsync", "k": 1, "when": "during"}, "when 'during'"),
        ({"op": "fsync", "k": 1, "do": "drop"}, "do 'drop'"),
        ({"op": "fsync", "k": 1, "do": "fail", "errno": "ENOPE"}, "errno 'ENOPE'"),
    ):
        with pytest.raises(ValueError, match=word):
            CrashPoint.from_json(doc)


def test_a_point_counts_only_its_side_of_the_call_and_a_fail_answers_its_errno():
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                               start_new_session=True)  # fmt: skip
    try:
        points = CrashPoints()
        spec = {"op": "rename", "k": 1, "when": "before", "do": "fail", "errno": "ENOSPC"}
        points.arm({**spec, "only": [sleeper.pid]})
        assert points.passed("rename", "/c/1", sleeper.pid, "after") == 0  # the other side
        assert points.passed("rename", "/c/1", sleeper.pid, "before") == errno.ENOSPC
        assert points.passed("rename", "/c/2", sleeper.pid, "before") == 0  # fired once
        [fired] = points.counters()["crashes"]
        assert fired["errno"] == "ENOSPC" and fired["when"] == "before"
        assert sleeper.poll() is None  # a fail kills nobody
    finally:
        sleeper.kill()
        sleeper.wait(10)


def test_files_of_one_kind_count_together_and_the_kth_kills_the_callers_group():
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                               start_new_session=True)  # fmt: skip
    try:
        _kills_at_the_second(sleeper)
    finally:
        sleeper.kill()
        sleeper.wait(10)


def _kills_at_the_second(sleeper: subprocess.Popen[bytes]) -> None:
    points = CrashPoints()
    points.arm({"op": "rename", "k": 2, "path": "commits/", "only": [sleeper.pid]})
    points.passed("rename", "/checkpoint/offsets/7", sleeper.pid)  # another path: not counted
    points.passed("fsync", "/checkpoint/commits/7", sleeper.pid)  # another op: not counted
    points.passed("rename", "/checkpoint/commits/7", sleeper.pid)
    assert points.counters()["crashes"] == [] and sleeper.poll() is None
    points.passed("rename", "/checkpoint/commits/8", sleeper.pid)  # the 2nd of commits/N
    assert sleeper.wait(10) == -9
    [fired] = points.counters()["crashes"]
    assert fired["path"] == "/checkpoint/commits/8" and fired["k"] == 2
    assert fired["pgid"] == sleeper.pid and points.counters()["crash_armed"] is None


def test_the_callers_own_group_is_spared():
    points = CrashPoints()
    points.arm({"op": "fsync", "k": 1})
    points.passed("fsync", "/x", os.getpid())  # this process's group: never counted
    assert points.counters()["crashes"] == [] and points.disarm() is True


def test_the_first_sink_write_after_each_counted_call_is_made_late_while_armed():
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                               start_new_session=True)  # fmt: skip
    try:
        points = CrashPoints()
        spec = {"op": "rename", "k": 2, "path": "^/cp/commits/", "slow": "^/(?!cp/)"}
        points.arm({**spec, "slow_ms": 200, "only": [sleeper.pid]})
        pid = sleeper.pid
        assert points.slowed("/sink.db-wal", pid) == 0.2  # the first after the arming
        assert points.slowed("/sink.db-wal", pid) == 0.0  # the rest of it goes at once
        assert points.slowed("/cp/offsets/.1.tmp", pid) == 0.0  # the checkpoint: never
        assert points.passed("rename", "/cp/commits/1", pid) == 0  # the 1st: not yet
        assert points.slowed("/sink.db-wal", os.getpid()) == 0.0  # the harness: never
        assert points.slowed("/sink.db-wal", pid) == 0.2  # the next batch's first write
        assert points.passed("rename", "/cp/commits/2", pid) == 0  # fires (and kills)
        assert sleeper.wait(10) == -9
        assert points.counters()["crashes"][0]["slowed_writes"] == 2
        assert points.slowed("/sink.db-wal", pid) == 0.0  # fired: disarmed
    finally:
        sleeper.kill()
        sleeper.wait(10)


def test_a_bad_slow_is_named():
    with pytest.raises(ValueError, match="slow_ms -1"):
        CrashPoint.from_json({"op": "fsync", "k": 1, "slow": "x", "slow_ms": -1})


def test_a_gated_point_fires_at_the_first_matching_call_after_the_kth_gate_rename():
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                               start_new_session=True)  # fmt: skip
    try:
        points = CrashPoints()
        spec = {"op": "write", "k": 2, "when": "before", "do": "fail", "errno": "ENOSPC"}
        gate = r"^/checkpoint/offsets/\d+$"
        points.arm({**spec, "path": "^/(?!checkpoint/)", "gate": gate, "only": [sleeper.pid]})
        pid = sleeper.pid
        assert points.passed("write", "/db-wal", pid, "before") == 0  # before any gate
        assert points.passed("rename", "/checkpoint/offsets/4", pid, "after") == 0  # 1st
        assert points.passed("write", "/db-wal", pid, "before") == 0  # not yet the k-th
        assert points.passed("rename", "/checkpoint/offsets/4", pid, "before") == 0  # side
        assert points.counters()["crash_armed"]["opened_by"] is None
        assert points.passed("rename", "/checkpoint/offsets/5", pid, "after") == 0  # 2nd
        assert points.passed("write", "/checkpoint/commits/5", pid, "before") == 0  # not sink
        assert points.passed("write", "/db-wal", pid, "after") == 0  # the other side
        assert points.passed("write", "/db-wal", pid, "before") == errno.ENOSPC
        [fired] = points.counters()["crashes"]
        assert fired["after"] == "/checkpoint/offsets/5" and fired["path"] == "/db-wal"
        assert points.passed("write", "/db-wal", pid, "before") == 0  # fired once
    finally:
        sleeper.kill()
        sleeper.wait(10)


def test_with_min_write_an_fsync_counts_only_after_a_commit_frame_or_a_write_of_that_size():
    """SQLite syncs a new WAL's 32-byte header alone before the first transaction after a
    reset, and the log before a checkpoint: those fsyncs are not a commit's; in a WAL a commit
    is the sync after a frame whose "database size after commit" is set."""
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                               start_new_session=True)  # fmt: skip
    try:
        points = CrashPoints()
        points.arm({"op": "fsync", "k": 1, "path": "(-wal|/db)$", "min_write": 512, "do": "fail",
                    "errno": "EIO", "only": [sleeper.pid]})  # fmt: skip
        pid = sleeper.pid
        header = bytes(32)  # a new log's header, synced alone
        assert points.passed("write", "/db-wal", pid, "after", data=header, offset=0) == 0
        assert points.passed("fsync", "/db-wal", pid, "after") == 0  # its sync: not counted
        page = bytes(24) + bytes(4096)  # a frame that commits nothing (db size 0)
        assert points.passed("write", "/db-wal", pid, "after", data=page, offset=32) == 0
        assert points.passed("fsync", "/db-wal", pid, "after") == 0  # a checkpoint's sync
        assert (
            points.passed("write", "/db", pid, "after", data=bytes(100), offset=0) == 0
        )  # < min_write
        assert points.passed("fsync", "/db", pid, "after") == 0
        commit = (7).to_bytes(4, "big") + (9).to_bytes(4, "big") + bytes(16)  # db size 9
        assert points.passed("write", "/db-wal", pid, "after", data=commit, offset=32 + 4120) == 0
        assert points.passed("fsync", "/other-wal", pid, "after") == 0  # another file's
        assert points.passed("fsync", "/db-wal", pid, "after") == errno.EIO  # the commit's
    finally:
        sleeper.kill()
        sleeper.wait(10)


def test_a_watch_counts_the_sinks_commits_until_its_file_is_renamed_in_and_acts_on_nothing():
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                               start_new_session=True)  # fmt: skip
    try:
        points = CrashPoints()
        points.watch({"until": r"^/checkpoint/commits/7$", "count": "^/(?!checkpoint/)",
                      "min_write": 512})  # fmt: skip
        pid = sleeper.pid
        commit = (1).to_bytes(4, "big") + (3).to_bytes(4, "big") + bytes(16)
        assert points.passed("write", "/db-wal", pid, "after", data=commit, offset=32) == 0
        assert points.passed("fsync", "/db-wal", pid, "after") == 0  # one commit, not failed
        assert (
            points.passed("write", "/checkpoint/x", pid, "after", data=bytes(4096), offset=0) == 0
        )
        assert points.passed("fsync", "/checkpoint/x", pid, "after") == 0  # not the sink
        assert points.passed("rename", "/checkpoint/commits/6", pid, "after") == 0
        assert points.passed("rename", "/checkpoint/commits/7", pid, "after") == 0  # the end
        assert points.passed("write", "/db-wal", pid, "after", data=commit, offset=32) == 0
        assert points.passed("fsync", "/db-wal", pid, "after") == 0  # after it: not counted
        [watch] = points.counters()["watches"]
        assert watch == {"until": r"^/checkpoint/commits/7$", "commits": 1, "done": True}
        with pytest.raises(ValueError, match="until"):
            points.watch({"count": "x"})
    finally:
        sleeper.kill()
        sleeper.wait(10)


def test_a_point_that_fires_starts_its_watch_at_once_for_the_batch_it_fired_at():
    """The replay may begin before anyone reads the counters: the daemon starts the watch
    inside the call it kills in."""
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                               start_new_session=True)  # fmt: skip
    try:
        points = CrashPoints()
        points.arm({"op": "rename", "k": 1, "when": "before", "do": "fail",
                    "path": "^/checkpoint/commits/", "watch_until": "^/checkpoint/commits/{n}$",
                    "watch_count": "^/(?!checkpoint/)", "only": [sleeper.pid]})  # fmt: skip
        pid = sleeper.pid
        assert points.passed("rename", "/checkpoint/commits/12", pid, "before") != 0
        [fired] = points.counters()["crashes"]
        assert fired["watching"] == "^/checkpoint/commits/12$"
        commit = (1).to_bytes(4, "big") + (3).to_bytes(4, "big") + bytes(16)
        assert points.passed("write", "/db-wal", pid, "after", data=commit, offset=32) == 0
        assert points.passed("fsync", "/db-wal", pid, "after") == 0
        assert points.passed("rename", "/checkpoint/commits/12", pid, "after") == 0
        [watch] = points.counters()["watches"]
        assert watch == {"until": "^/checkpoint/commits/12$", "commits": 1, "done": True}
    finally:
        sleeper.kill()
        sleeper.wait(10)


def test_with_next_call_a_point_fires_before_the_callers_next_call_once_its_commit_returned():
    """A SQLite writer updates its WAL index after the commit's fsync: killed inside it, its
    commit is on disk yet never seen by the connections already open. The point lets the
    commit return and kills before the writer's next call, whatever it is."""
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                               start_new_session=True)  # fmt: skip
    try:
        points = CrashPoints()
        points.arm({"op": "fsync", "k": 1, "path": "-wal$", "min_write": 512, "do": "fail",
                    "errno": "EIO", "next_call": True, "only": [sleeper.pid]})  # fmt: skip
        pid = sleeper.pid
        commit = (1).to_bytes(4, "big") + (3).to_bytes(4, "big") + bytes(16)
        assert points.passed("write", "/db-wal", pid, "after", data=commit, offset=32) == 0
        assert points.passed("fsync", "/db-wal", pid, "after") == 0  # the commit returns
        assert points.passed("write", "/other", os.getpid(), "before") == 0  # not its group
        assert points.passed("create", "/checkpoint/commits/.4.tmp", pid, "after") == 0  # side
        assert points.passed("create", "/checkpoint/commits/.4.tmp", pid, "before") == errno.EIO
        [fired] = points.counters()["crashes"]
        assert (fired["op"], fired["path"]) == ("fsync", "/db-wal")
        assert fired["next"] == {"op": "create", "path": "/checkpoint/commits/.4.tmp"}
    finally:
        sleeper.kill()
        sleeper.wait(10)


def _sleeper() -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                            start_new_session=True)  # fmt: skip


def test_a_fresh_point_counts_only_process_groups_started_since_it_was_armed():
    """A restart boundary: the running incarnation (started before the arming) is killed by
    the harness; the point counts its successor's commits alone, never the old one's (nor a
    zombie writer's left running beside it)."""
    import time

    old = _sleeper()
    try:
        time.sleep(0.05)  # at least a clock tick (10 ms) before the arming
        points = CrashPoints()
        points.arm({"op": "fsync", "k": 2, "path": "-wal$", "do": "fail", "errno": "EIO",
                    "fresh": True})  # fmt: skip
        new = _sleeper()
        try:
            assert points.passed("fsync", "/store.db-wal", old.pid) == 0  # started before
            assert points.passed("fsync", "/store.db-wal", old.pid) == 0
            assert points.counters()["crashes"] == []
            assert points.passed("fsync", "/store.db-wal", new.pid) == 0  # its commit #1
            assert points.passed("fsync", "/store.db-wal", new.pid) == errno.EIO  # its #2
            [fired] = points.counters()["crashes"]
            assert fired["pgid"] == new.pid and fired["k"] == 2
        finally:
            new.kill()
            new.wait(10)
    finally:
        old.kill()
        old.wait(10)


def test_a_point_that_fires_at_the_next_call_keeps_the_commits_number():
    sleeper = _sleeper()
    try:
        points = CrashPoints()
        points.arm({"op": "fsync", "k": 3, "path": "-wal$", "do": "fail", "next_call": True,
                    "only": [sleeper.pid]})  # fmt: skip
        for _ in range(3):
            assert points.passed("fsync", "/s.db-wal", sleeper.pid, "after") == 0
        assert points.passed("write", "/s.db-wal", sleeper.pid, "before") == errno.EIO
        [fired] = points.counters()["crashes"]
        assert fired["k"] == 3 and fired["next"] == {"op": "write", "path": "/s.db-wal"}
    finally:
        sleeper.kill()
        sleeper.wait(10)


def test_temporary_files_named_by_a_uuid_are_one_kind():
    from sealcheck.infra.crash_points import kind_of

    a = "/checkpoint/commits/.17.801b03dd-7af2-4c29-a413-218664a7655d.tmp"
    b = "/checkpoint/commits/.18.0c1e9a2b-1d2e-4f3a-8b9c-0d1e2f3a4b5c.tmp"
    assert kind_of(a) == kind_of(b) == "/checkpoint/commits/.N.U.tmp"
    assert kind_of("/checkpoint/offsets/17") == "/checkpoint/offsets/N"
