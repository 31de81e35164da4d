"""The ``boundary`` nemesis without a mount (:mod:`sealcheck.nemeses.boundary`): a job's
boundaries come from its windows, its plan is a seeded cover of them, a boundary that never
occurs is "not reached" with no kill, and a kill counts only where the directory shows it
landed on the boundary (the real filesystem: ``tests/integration/test_boundary_points.py``)."""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

from sealcheck.core.roles import SUT, Role
from sealcheck.core.windows import CrashWindow, boundaries, streaming_windows
from sealcheck.nemeses.api import Action, PlanInfo
from sealcheck.nemeses.boundary import CrashAtBoundary

WINDOWS = streaming_windows("checkpoint", ("tables/accounts",))


def test_each_file_window_has_three_edges_and_a_shared_closing_is_named_once() -> None:
    found = boundaries({**WINDOWS, "log": CrashWindow(r"merged (\d+)", closes=r"done {n}")})
    assert sorted(found) == [
        "after-commit:accounts:opened",
        "after-offsets:closed",
        "after-offsets:closing",
        "after-offsets:committed",
        "after-offsets:full",
        "after-offsets:opened",
        "after-offsets:unwritable",
    ]  # a window told by the log has no file to hold; commits/N closes both windows; the
    # sink's edges only where the window's closing is its own opening's {n}
    closing = found["after-offsets:closing"]
    assert closing.when == "before" and closing.path == r"^/checkpoint/commits/\d+$"
    assert "checkpoint/commits/N" in closing.what
    assert found["after-offsets:opened"].when == "after"
    committed, full = found["after-offsets:committed"], found["after-offsets:full"]
    assert (committed.op, committed.when, committed.do) == ("fsync", "after", "kill")
    assert (full.op, full.when, full.do, full.errno) == ("write", "before", "fail", "ENOSPC")
    unwritable = found["after-offsets:unwritable"]  # commits/N's temporary file breaks
    assert (unwritable.op, unwritable.when, unwritable.do, unwritable.errno) == (
        "write", "before", "fail", "EIO",
    )  # fmt: skip
    assert re.search(unwritable.path, "/checkpoint/commits/.7.0b9e-41.tmp")
    assert not re.search(unwritable.path, "/checkpoint/commits/..7.0b9e-41.tmp.crc")
    for sink in (committed, full):  # the sink: any file outside the checkpoint, after offsets/N
        assert sink.gate == found["after-offsets:opened"].path
        assert re.search(sink.path, "/accounts.db-wal")
        assert not re.search(sink.path, "/checkpoint/commits/3")


class _Disk:
    def __init__(self, fire: dict[str, Any] | None) -> None:
        self.fire, self.crashes, self.armed = fire, [], None  # type: list[dict[str, Any]]

    def counters(self) -> dict[str, Any]:
        if self.armed is not None and self.fire is not None:
            self.crashes.append(self.fire)
            self.armed = None
        return {"crashes": list(self.crashes)}

    def arm_crash(self, op: str, k: int, path: str = "", **kw: Any) -> dict[str, Any]:
        self.armed = {"op": op, "k": k, "path": path, **kw}
        return {}

    def disarm_crash(self) -> dict[str, Any]:
        was, self.armed = self.armed, None
        return {"disarmed": was is not None}

    def watch(self, until: str, count: str, min_write: int = 0) -> dict[str, Any]:
        self.watched = (until, count, min_write)
        return {}


class _Target:
    def __init__(self, disk: _Disk, root: Path) -> None:
        self.disk, self.root, self.killed = disk, root, 0

    def nodes(self, role: str) -> list[Any]:
        target = self

        class Node:
            def kill(self) -> None:
                target.killed += 1

        return [Node()]

    def windows(self) -> Any:
        return WINDOWS

    def files(self) -> Path:
        return self.root

    def disks(self) -> dict[str, Any]:
        return {"store": self.disk}

    def sealed(self) -> int:
        return 0


def _nemesis() -> CrashAtBoundary:
    info = PlanInfo(roles={SUT.name: Role(SUT.name)}, boundaries=tuple(boundaries(WINDOWS)))
    return CrashAtBoundary(info)


def test_the_plan_covers_every_boundary_from_the_seed() -> None:
    def plan(seed: int) -> list[Any]:
        rng, nemesis = random.Random(seed), _nemesis()
        return [nemesis.plan(rng, 20.0 * i, 20.0)[0].value for i in range(4)]

    first = plan(3)
    assert first == plan(3)  # the same seed, the same faults
    every = sorted(boundaries(WINDOWS))
    for seed in range(20):  # the edges where mistakes show come first, `opened` and
        # `unwritable` after them
        aims = [v["boundary"] for v in plan(seed)] + [v["boundary"] for v in plan(seed)]
        firsts = [b for b in every if not b.endswith((":opened", ":unwritable"))]
        assert sorted(aims[: len(firsts)]) == firsts, seed
    cover = _nemesis()
    rng = random.Random(5)
    aimed = [cover.plan(rng, 20.0 * i, 20.0)[0].value["boundary"] for i in range(len(every))]
    assert sorted(aimed) == every  # then every one


def test_a_boundary_that_never_occurs_is_not_reached_and_nobody_is_killed(tmp_path: Path) -> None:
    target = _Target(_Disk(fire=None), tmp_path)
    nemesis = _nemesis()
    action = Action(0.0, "boundary", "crash-at-boundary",
                    {"boundary": "after-offsets:closing", "skip": 0, "chance_s": 0.2})  # fmt: skip
    assert nemesis.invoke(action, target)["outcome"] == "pending"  # type: ignore[arg-type]
    assert target.disk.armed["when"] == "before"  # type: ignore[index]
    done = nemesis.resolve(action, target, 0.0)  # type: ignore[arg-type]
    assert done["outcome"] == "skipped" and done["why"].startswith("not reached: no before")
    assert target.killed == 0 and target.disk.armed is None


def test_a_sink_boundary_is_armed_behind_its_gate_and_its_evidence_names_it(
    tmp_path: Path,
) -> None:
    action = Action(0.0, "boundary", "crash-at-boundary",
                    {"boundary": "after-offsets:full", "skip": 1})  # fmt: skip
    failed = {"op": "write", "when": "before", "path": "/accounts.db-wal", "pgid": 42,
              "errno": "ENOSPC", "after": "/checkpoint/offsets/9"}  # fmt: skip
    target = _Target(_Disk(fire=failed), tmp_path)
    nemesis = _nemesis()
    armed = nemesis.invoke(action, target)  # type: ignore[arg-type]
    spec = target.disk.armed
    assert spec is not None and (spec["op"], spec["k"], spec["do"]) == ("write", 2, "fail")
    assert spec["errno"] == "ENOSPC" and spec["gate"] == r"^/checkpoint/offsets/(\d+)$"
    assert "after rename #2 of" in armed["armed"]
    done = nemesis.resolve(action, target, 0.0)  # type: ignore[arg-type]
    assert done["outcome"] == "happened" and done["effect"]["effect"] is True
    assert "failed with ENOSPC, the first after /checkpoint/offsets/9" in done["effect"]["evidence"]
    target = _Target(_Disk(fire={**failed, "after": None}), tmp_path)
    nemesis = _nemesis()
    nemesis.invoke(action, target)  # type: ignore[arg-type]
    done = nemesis.resolve(action, target, 0.0)  # type: ignore[arg-type]
    assert done["effect"]["effect"] is None  # which opening it followed: not recorded


def test_a_kill_counts_only_where_the_renamed_file_was_new(tmp_path: Path) -> None:
    """The record of the call itself, not the directory at settling: by then the restarted
    job may have redone the batch and written its commits/N."""
    action = Action(0.0, "boundary", "crash-at-boundary",
                    {"boundary": "after-offsets:closing", "skip": 1})  # fmt: skip
    crash = {"op": "rename", "when": "before", "path": "/checkpoint/commits/7", "pgid": 42}
    (tmp_path / "checkpoint" / "commits").mkdir(parents=True)
    (tmp_path / "checkpoint" / "commits" / "7").touch()  # redone since: it does not matter
    for existed, bit in ((False, True), (True, False), (None, None)):
        target = _Target(_Disk(fire={**crash, "existed": existed}), tmp_path)
        nemesis = _nemesis()
        nemesis.invoke(action, target)  # type: ignore[arg-type]
        done = nemesis.resolve(action, target, 0.0)  # type: ignore[arg-type]
        assert done["outcome"] == "happened" and done["effect"]["effect"] is bit, done
        if bit:
            assert "never put in place" in done["effect"]["evidence"]


def test_a_sink_boundary_whose_window_opened_but_sink_stayed_silent_says_why(
    tmp_path: Path,
) -> None:
    """A sink off the job's disk (a database server, a topic): offsets/N was renamed, no
    fsync outside the checkpoint followed; "not reached" says so, and nobody was killed."""

    class Silent(_Disk):
        def counters(self) -> dict[str, Any]:
            return {**super().counters(), "unfired": {"opened_by": "/checkpoint/offsets/4"}}

    target = _Target(Silent(fire=None), tmp_path)
    nemesis = _nemesis()
    aim = {"boundary": "after-offsets:committed", "skip": 0, "chance_s": 0.2}
    action = Action(0.0, "boundary", "crash-at-boundary", aim)
    nemesis.invoke(action, target)  # type: ignore[arg-type]
    done = nemesis.resolve(action, target, 0.0)  # type: ignore[arg-type]
    assert done["outcome"] == "skipped" and "nobody was killed" in done["why"]
    assert "after /checkpoint/offsets/4 the job made no fsync outside its checkpoint" in done["why"]
    assert target.killed == 0


def test_after_a_replaying_kill_the_disk_watches_the_replay_and_the_findings_say_what_it_did(
    tmp_path: Path,
) -> None:
    """A kill before commits/7: the point itself starts, as it fires, a watch of the job's sink
    commits until commits/7 is renamed in again; the findings (with the heal) give the count:
    0, the job skipped what it had applied."""
    until = r"^/checkpoint/commits/7$"
    crash = {"op": "rename", "when": "before", "path": "/checkpoint/commits/7", "pgid": 42,
             "existed": False, "watching": until}  # fmt: skip

    class Watched(_Disk):
        def counters(self) -> dict[str, Any]:
            other = {"until": "^/checkpoint/commits/3$", "commits": 5, "done": True}
            mine = {"until": until, "commits": 0, "done": True}
            return {**super().counters(), "watches": [other, mine]}

    target = _Target(Watched(fire=crash), tmp_path)
    nemesis = _nemesis()
    action = Action(0.0, "boundary", "crash-at-boundary",
                    {"boundary": "after-offsets:closing", "skip": 0})  # fmt: skip
    nemesis.invoke(action, target)  # type: ignore[arg-type]
    spec = target.disk.armed
    assert spec is not None and spec["watch_until"] == r"^/checkpoint/commits/{n}$"
    assert spec["watch_count"] == "^/(?!checkpoint/)"
    done = nemesis.resolve(action, target, 0.0)  # type: ignore[arg-type]
    assert done["replays"] == 7
    found = nemesis.findings(target)  # type: ignore[arg-type]
    assert found == [{"replayed": 7, "sink_commits": 0, "done": True}]  # its own watch only
    from sealcheck.nemeses.coverage import coverage

    meta = {"schedule": [{"at_s": 0.0, "nemesis": "boundary", "f": "crash-at-boundary",
                          "value": action.value}]}  # fmt: skip
    ops = [{"process": "nemesis", "f": "crash-at-boundary", "value": {**done, "action": 0}},
           {"process": "nemesis", "f": "heal", "value": {"nemesis": "boundary", "healed": [],
                                                          "findings": found}}]  # fmt: skip
    [row] = coverage(meta, ops)
    assert (row.replays_skipped, row.replays_changed) == (1, 0)
    assert "replayed batch 7 and committed nothing to its sink" in row.replay
    changed = [{**found[0], "sink_commits": 2}]
    ops[1]["value"]["findings"] = changed
    [row] = coverage(meta, ops)
    assert (row.replays_skipped, row.replays_changed) == (0, 1)


STORE = r"^/store\.db-wal$"


def test_a_store_has_a_boundary_after_each_of_a_restarts_first_commits() -> None:
    found = boundaries({}, STORE)
    assert sorted(found) == ["restart:commit-1", "restart:commit-2", "restart:commit-3"]
    second = found["restart:commit-2"]
    assert (second.op, second.when, second.k, second.restart, second.next_call) == (
        "fsync", "after", 2, True, True,
    )  # fmt: skip
    assert second.min_write > 0 and "commit #2" in second.what
    assert boundaries({}) == {} and sorted(boundaries(WINDOWS, STORE)) == sorted(
        [*boundaries(WINDOWS), *found]
    )


class _Restarting(_Target):
    """A target whose one incarnation (process group 100) is killed by the fault."""

    def nodes(self, role: str) -> list[Any]:
        target = self

        class Node:
            ident = 100

            def kill(self) -> int:
                target.killed += 1
                return 100

        return [Node()]


def test_a_restart_boundary_kills_the_running_incarnation_and_counts_its_successors_commits(
    tmp_path: Path,
) -> None:
    info = PlanInfo(roles={SUT.name: Role(SUT.name)}, boundaries=tuple(boundaries({}, STORE)),
                    commit_files=STORE)  # fmt: skip
    action = Action(0.0, "boundary", "crash-at-boundary",
                    {"boundary": "restart:commit-2", "skip": 2})  # fmt: skip
    crash = {"op": "fsync", "when": "after", "path": "/store.db-wal", "pgid": 101, "k": 2,
             "next": {"op": "write", "path": "/store.db-wal"}}  # fmt: skip
    for fired, bit in (({}, True), ({"pgid": 100}, False), ({"k": 1}, None)):
        target = _Restarting(_Disk(fire={**crash, **fired}), tmp_path)
        nemesis = CrashAtBoundary(info)
        done = nemesis.invoke(action, target)  # type: ignore[arg-type]
        assert done["restarted"] == 100 and target.killed == 1
        spec = target.disk.armed
        assert spec is not None and (spec["k"], spec["fresh"], spec["next_call"]) == (2, True, True)
        done = nemesis.resolve(action, target, 0.0)  # type: ignore[arg-type]
        assert done["outcome"] == "happened" and done["effect"]["effect"] is bit, done
    assert "its commit #2 since it started after 100 was killed" in _evidence_of(
        info, action, crash
    )


def _evidence_of(info: PlanInfo, action: Action, crash: dict[str, Any]) -> str:
    target = _Restarting(_Disk(fire=crash), Path("."))
    nemesis = CrashAtBoundary(info)
    nemesis.invoke(action, target)  # type: ignore[arg-type]
    return str(nemesis.resolve(action, target, 0.0)["effect"]["evidence"])  # type: ignore[arg-type]


def test_a_system_with_commit_files_or_file_windows_offers_commit_boundaries() -> None:
    from types import MappingProxyType

    from sealcheck.systems.api import SystemUnderTest
    from sealcheck.systems.upsert_source import UpsertSource

    class Store(SystemUnderTest):
        commit_files = STORE

    class Logged(SystemUnderTest):
        windows = MappingProxyType({"log": CrashWindow(r"merged (\d+)", closes=r"done {n}")})

    assert "commit-boundaries" in Store().offers("local")
    assert "commit-boundaries" not in Logged().offers("local")  # a log line: nothing to hold
    assert "commit-boundaries" in UpsertSource().offers("local")
    assert "commit-boundaries" not in UpsertSource().offers("containers")  # PostgreSQL
