"""The ``boundary`` nemesis without a mount (:mod:`sealcheck.nemeses.boundary`): a job's
boundaries come from its windows, its plan is a seeded cover of them, a boundary that never
occurs is "not reached" with no kill, and a kill counts only where the directory shows it
landed on the boundary (the real filesystem: ``tests/integration/test_boundary_points.py``)."""

from __future__ import annotations

import random
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
        "after-offsets:opened",
    ]  # a window told by the log has no file to hold; commits/N closes both windows
    closing = found["after-offsets:closing"]
    assert closing.when == "before" and closing.path == r"^/checkpoint/commits/\d+$"
    assert "checkpoint/commits/N" in closing.what
    assert found["after-offsets:opened"].when == "after"


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
    assert sorted(v["boundary"] for v in first) == sorted(boundaries(WINDOWS))


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
