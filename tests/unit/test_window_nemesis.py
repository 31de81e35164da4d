"""The ``window`` nemesis (:mod:`sealcheck.nemeses.window`) against a real process that writes
a checkpoint as a streaming query does (``offsets/N``, work, ``commits/N``): it kills the
process at the planned opening, and the evidence says whether the kill landed inside the
window. The schedule comes from the seed alone."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path
from typing import Any

from sealcheck.core.roles import SUT, Role
from sealcheck.core.windows import CrashWindow, streaming_windows
from sealcheck.nemeses.api import Action, PlanInfo
from sealcheck.nemeses.window import CrashInWindow

#: a query's checkpoint, one batch at a time: offsets/N, ``work`` seconds, commits/N, ``rest``
#: seconds (windows far wider than any scheduling delay: nothing here rests on timing luck)
QUERY = """
import os, sys, time
root, work, rest = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
for d in ("offsets", "commits"):
    os.makedirs(f"{root}/checkpoint/{d}", exist_ok=True)
sys.stdin.readline()  # the window is armed: go
for n in range(1000):
    open(f"{root}/checkpoint/offsets/{n}", "w").close()
    print(f"batch {n} planned", flush=True)
    time.sleep(work)
    open(f"{root}/checkpoint/commits/{n}", "w").close()
    print(f"batch {n} written", flush=True)
    time.sleep(rest)
"""


class _Process:
    """The ``sut`` node: one real process."""

    def __init__(self, root: Path, work: float, rest: float) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.log = root / "out.log"
        argv = [sys.executable, "-c", QUERY, str(root), str(work), str(rest)]
        with self.log.open("w") as out:
            self.proc = subprocess.Popen(argv, stdout=out, stdin=subprocess.PIPE, text=True)

    def go(self) -> None:
        """Start the batches (once the window is armed: nothing here rests on timing)."""
        assert self.proc.stdin is not None
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def kill(self) -> int | None:
        if self.proc.poll() is not None:
            return None
        self.proc.kill()
        return self.proc.pid

    def log_text(self) -> str:
        return self.log.read_text()


class _Target:
    def __init__(
        self, root: Path, windows: dict[str, CrashWindow], work: float = 5.0, rest: float = 0.05
    ) -> None:
        self.root, self._windows = root, windows
        self.node = _Process(root, work, rest)

    def nodes(self, role: str) -> list[Any]:
        return [self.node] if role == SUT.name else []

    def windows(self) -> dict[str, CrashWindow]:
        return self._windows

    def files(self) -> Path:
        return self.root

    def disks(self) -> dict[str, Any]:
        return {}  # no lazy disk: the watcher (from below: test_crash_at_sync)

    def sealed(self) -> int:
        return len(list((self.root / "checkpoint" / "commits").glob("*")))


def _nemesis(windows: dict[str, CrashWindow]) -> CrashInWindow:
    return CrashInWindow(PlanInfo(roles={SUT.name: Role(SUT.name)}, windows=tuple(windows)))


def _act(target: _Target, **value: Any) -> dict[str, Any]:
    nemesis = _nemesis(target.windows())
    action = Action(0.0, "window", "crash-in-window", value)
    started = nemesis.invoke(action, target)  # type: ignore[arg-type]
    assert started["outcome"] == "pending"
    target.node.go()
    try:
        return nemesis.resolve(action, target, 0.0)  # type: ignore[arg-type]
    finally:
        target.node.kill()
        target.node.proc.wait(10)


def test_a_kill_at_the_chosen_opening_lands_inside_the_window(tmp_path):
    # each batch works 2 s between offsets/N and commits/N: the kill lands inside
    target = _Target(tmp_path, dict(streaming_windows()), work=2.0, rest=0.05)
    done = _act(target, window="after-offsets", skip=1, delay_ms=0.0)
    assert done["outcome"] == "happened" and done["killed"] == target.node.proc.pid
    assert target.node.proc.wait(10) == -9  # SIGKILL: the fault bit
    assert done["opened_by"] == "1"  # the second opening: one let pass
    assert done["effect"]["effect"] is True, done
    assert "before the window closed" in done["effect"]["evidence"]
    assert not (tmp_path / "checkpoint" / "commits" / "1").exists()


def test_a_kill_after_the_window_closed_says_so(tmp_path):
    # commits/0 follows offsets/0 at once; the kill comes 1.5 s later, in the 60 s rest
    target = _Target(tmp_path, dict(streaming_windows()), work=0.0, rest=60.0)
    done = _act(target, window="after-offsets", skip=0, delay_ms=1500.0)
    assert done["effect"]["effect"] is False
    assert "commits/0 was already there" in done["effect"]["evidence"]


def test_a_log_line_opens_a_window_too(tmp_path):
    windows = {"planned": CrashWindow(r"batch (\d+) planned", closes=r"batch {n} written")}
    target = _Target(tmp_path, windows, work=2.0)
    done = _act(target, window="planned", skip=2, delay_ms=0.0)
    assert done["opened_by"] == "batch 2 planned" and done["effect"]["effect"] is True
    # and after it closed: the batch's own closing line was already in the log
    target = _Target(tmp_path / "2", windows, work=0.0, rest=60.0)
    done = _act(target, window="planned", skip=0, delay_ms=1500.0)
    assert done["effect"]["effect"] is False and "batch 0 written" in done["effect"]["evidence"]


def test_a_window_that_never_opens_is_not_reached_and_nobody_is_killed(tmp_path):
    windows = {"never": CrashWindow(r"never-(\d+)", "checkpoint/offsets")}
    target = _Target(tmp_path, windows)
    nemesis = _nemesis(windows)
    action = Action(0.0, "window", "crash-in-window", {"window": "never", "chance_s": 0.5})
    nemesis.invoke(action, target)  # type: ignore[arg-type]
    target.node.go()
    try:
        done = nemesis.resolve(action, target, 0.0)  # type: ignore[arg-type]
        assert done["outcome"] == "skipped" and done["why"].startswith("not reached: never")
        assert target.node.proc.poll() is None  # nobody was killed
        assert nemesis.heal(target) == []  # type: ignore[arg-type]
    finally:
        target.node.kill()  # the test's own process: never left behind
        target.node.proc.wait(10)


def test_the_schedule_comes_from_the_seed_alone():
    names = tuple(streaming_windows("checkpoint", ("data", "errors")))

    def plan(seed: int) -> list[Action]:
        n = CrashInWindow(PlanInfo(roles={SUT.name: Role(SUT.name)}, windows=names))
        rng = random.Random(seed)
        return [a for w in range(6) for a in n.plan(rng, w * 20.0, 20.0)]

    assert plan(3) == plan(3) and plan(3) != plan(4)
    assert {a.value["window"] for a in plan(3)[:3]} == set(names)  # a cover before repeats
