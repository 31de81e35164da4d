"""The ``upgrade`` nemesis without a run: what it plans from the seed (one upgrade per window
given to it, in version order, until the last version), what it does to a stand-in target
(the version switched before the running incarnation is stopped, by the planned signal) and
the evidence it records; with crash windows, a kill inside one (against a real process
writing a checkpoint), or nobody killed when it does not open; a system without versions
cannot host it."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from sealcheck.core.roles import SUT
from sealcheck.core.windows import CrashWindow, streaming_windows
from sealcheck.nemeses.api import Action, PlanInfo
from sealcheck.nemeses.registry import requirements
from sealcheck.nemeses.rollback import Rollback
from sealcheck.nemeses.upgrade import Upgrade
from tests.unit.test_window_nemesis import _Process

INFO = PlanInfo(roles={SUT.name: SUT}, versions=("v1", "v2", "v3"))


def _plan(seed: int, windows: int = 5) -> list[Action]:
    nemesis, rng = Upgrade(INFO), random.Random(seed)
    return [a for w in range(windows) for a in nemesis.plan(rng, 10.0 * w, 10.0)]


def test_it_plans_each_next_version_once_in_order_from_the_seed() -> None:
    plan = _plan(4)
    assert [(a.value["from"], a.value["to"]) for a in plan] == [("v1", "v2"), ("v2", "v3")]
    assert all(a.f == "upgrade" and a.value["signal"] in ("SIGTERM", "SIGKILL") for a in plan)
    assert plan[0].at_s < 5.0 and 10.0 <= plan[1].at_s < 15.0  # each in its window's first half
    assert _plan(4) == plan  # the same seed, the same schedule
    signals = {a.value["signal"] for seed in range(20) for a in _plan(seed)}
    assert signals == {"SIGTERM", "SIGKILL"}  # both ways of stopping are planned


def test_one_version_or_none_plans_nothing_and_it_requires_versions() -> None:
    assert (
        Upgrade(PlanInfo(roles={SUT.name: SUT}, versions=("v1",))).plan(random.Random(1), 0.0, 10.0)
        == []
    )
    assert requirements("upgrade", {SUT.name: SUT}) == frozenset({"versions"})


class _Sut:
    """The supervised incarnation: stopping it starts the next one (as the supervisor does)."""

    def __init__(self) -> None:
        self.ident: int | None = 100
        self.calls: list[str] = []

    def _next(self, how: str) -> int:
        self.calls.append(how)
        was, self.ident = self.ident, (self.ident or 0) + 1
        return was or 0

    def kill(self) -> int:
        return self._next("kill")

    def terminate(self, timeout_s: float) -> tuple[int, int]:
        return self._next(f"terminate {timeout_s:g}"), 0  # it finished its batch: exit 0


class _Versions:
    def __init__(self) -> None:
        self.current = "v1"

    def switch(self, version: str) -> None:
        self.current = version


class _Target:
    def __init__(self) -> None:
        self.sut, self._versions = _Sut(), _Versions()

    def nodes(self, role: str) -> list[Any]:
        return [self.sut] if role == SUT.name else []

    def versions(self) -> _Versions:
        return self._versions


@pytest.mark.parametrize(
    ("signal", "call", "said"),
    [("SIGTERM", "terminate 30", "SIGTERM, exit 0"), ("SIGKILL", "kill", "SIGKILL")],
)
def test_it_switches_the_version_then_stops_the_running_one(
    signal: str, call: str, said: str
) -> None:
    target = _Target()
    action = Action(1.0, "upgrade", "upgrade", {"from": "v1", "to": "v2", "signal": signal})
    done = Upgrade(INFO).invoke(action, target)  # type: ignore[arg-type]
    assert target.sut.calls == [call] and target.versions().current == "v2"
    assert done["outcome"] == "happened" and done["was_running"] == "v1"
    assert (done["stopped"], done["running"]) == (100, 101)
    assert done["effect"]["effect"] is True
    assert done["effect"]["evidence"].startswith(f"100 (v1) stopped by {said}; 101 runs v2")


def test_with_nothing_running_it_is_skipped_but_the_version_is_switched() -> None:
    target = _Target()
    target.sut.ident = None
    target.sut.kill = lambda: None  # type: ignore[method-assign]
    action = Action(1.0, "upgrade", "upgrade", {"from": "v1", "to": "v2", "signal": "SIGKILL"})
    done = Upgrade(INFO).invoke(action, target)  # type: ignore[arg-type]
    assert done["outcome"] == "skipped" and target.versions().current == "v2"


def test_with_crash_windows_it_also_plans_a_kill_inside_one() -> None:
    info = PlanInfo(roles={SUT.name: SUT}, versions=("v1", "v2"), windows=("a", "b"))
    plans = [Upgrade(info).plan(random.Random(seed), 0.0, 10.0)[0].value for seed in range(30)]
    windowed = [v for v in plans if v["signal"] == "window"]
    assert windowed and len(windowed) < len(plans)  # one of three ways, from the seed
    assert {v["window"] for v in windowed} == {"a", "b"} and {v["skip"] for v in windowed} == {0, 1}


class _Restarting(_Process):
    """A real process writing a checkpoint (offsets/N, work, commits/N): killing it "starts"
    the next incarnation, as the supervisor does."""

    def __init__(self, root: Path) -> None:
        super().__init__(root, work=2.0, rest=0.05)
        self.ident: int | None = self.proc.pid

    def kill(self) -> int | None:
        was = super().kill()
        self.ident = None if was is None else was + 1
        return was


class _WindowTarget(_Target):
    def __init__(self, root: Path, windows: dict[str, CrashWindow]) -> None:
        super().__init__()
        self.root, self._windows = root, windows
        self.sut = _Restarting(root)  # type: ignore[assignment]

    def windows(self) -> dict[str, CrashWindow]:
        return self._windows

    def files(self) -> Path:
        return self.root

    def disks(self) -> dict[str, Any]:
        return {}

    def sealed(self) -> int:
        return len(list((self.root / "checkpoint" / "commits").glob("*")))


def _upgrade_in(target: _WindowTarget, window: str) -> tuple[dict[str, Any], dict[str, Any], bool]:
    """The upgrade armed and settled against the real process: the invoke's answer, the
    resolve's, and whether the process still ran after it."""
    info = PlanInfo(roles={SUT.name: SUT}, versions=("v1", "v2"), windows=tuple(target.windows()))
    nemesis = Upgrade(info)
    value = {"from": "v1", "to": "v2", "signal": "window", "window": window, "skip": 1}
    action = Action(1.0, "upgrade", "upgrade", {**value, "chance_s": 3.0})
    started = nemesis.invoke(action, target)  # type: ignore[arg-type]
    assert target.versions().current == "v2"  # switched before the kill it waits for
    node = target.sut
    assert isinstance(node, _Restarting)
    node.go()
    try:
        done = nemesis.resolve(action, target, 0.0)  # type: ignore[arg-type]
        return started, done, node.proc.poll() is None
    finally:
        node.proc.kill()  # the test's own process: never left behind
        node.proc.wait(10)


def test_a_kill_inside_a_crash_window_stops_the_version_and_the_next_runs_the_new_one(
    tmp_path: Path,
) -> None:
    target = _WindowTarget(tmp_path, dict(streaming_windows()))
    pid = target.sut.ident
    started, done, alive = _upgrade_in(target, "after-offsets")
    assert started["outcome"] == "pending"
    assert not alive and isinstance(target.sut, _Restarting)
    assert target.sut.proc.wait(10) == -9  # SIGKILLed by the upgrade: it bit
    assert done["outcome"] == "happened" and (done["stopped"], done["running"]) == (pid, pid + 1)
    assert done["opened_by"] == "1" and target.versions().current == "v2"
    said = done["effect"]["evidence"]
    assert done["effect"]["effect"] is True and said.startswith(f"{pid} (v1) killed "), said
    assert "before the window closed (after-offsets)" in said and f"{pid + 1} runs v2" in said


def test_a_crash_window_not_reached_kills_nobody_and_the_old_version_runs_on(
    tmp_path: Path,
) -> None:
    target = _WindowTarget(tmp_path, {"never": CrashWindow(r"never-(\d+)", "checkpoint/offsets")})
    started, done, alive = _upgrade_in(target, "never")
    assert started["outcome"] == "pending"
    assert done["outcome"] == "skipped" and done["why"].startswith("not reached: never")
    assert done["why"].endswith("; v1 runs on") and target.versions().current == "v1"
    assert alive  # nobody was killed


def test_rollback_plans_the_upgrade_and_the_way_back_in_turn() -> None:
    nemesis, rng = Rollback(INFO), random.Random(2)
    plan = [a for w in range(3) for a in nemesis.plan(rng, 10.0 * w, 10.0)]
    assert [(a.f, a.value["from"], a.value["to"]) for a in plan] == [
        ("upgrade", "v1", "v2"),
        ("rollback", "v2", "v1"),
        ("upgrade", "v1", "v2"),
    ]
    assert set(nemesis.marks) == {"upgrade", "rollback"}
    assert requirements("rollback", {SUT.name: SUT}) == frozenset({"versions"})
    target = _Target()
    target.versions().switch("v2")
    back = plan[1]
    done = nemesis.invoke(back, target)  # type: ignore[arg-type]
    assert target.versions().current == "v1" and done["was_running"] == "v2"
    assert done["effect"]["evidence"].startswith("100 (v2) stopped by SIG"), done
    assert "101 runs v1" in done["effect"]["evidence"]


def test_a_change_planned_after_one_not_made_is_skipped_and_stops_nobody() -> None:
    target = _Target()  # v1 runs: the upgrade to v2 was not reached
    back = Action(1.0, "rollback", "rollback", {"from": "v2", "to": "v1", "signal": "SIGKILL"})
    done = Rollback(PlanInfo(roles={SUT.name: SUT}, versions=("v1", "v2"))).invoke(back, target)  # type: ignore[arg-type]
    assert done["outcome"] == "skipped" and done["why"].startswith("v1 runs, not v2")
    assert target.sut.calls == [] and target.versions().current == "v1"


class _Windowed(_Target):
    def windows(self) -> dict[str, CrashWindow]:
        return dict(streaming_windows())

    def sealed(self) -> int:
        return 0


def test_a_kill_after_the_window_closed_upgrades_but_counts_no_effect_there(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from sealcheck.nemeses import upgrade

    late = "100 killed 5.0 ms after checkpoint/offsets/3: checkpoint/commits/3 was already there"
    settled_late = {
        "killed": 100,
        "effect": {"effect": False, "evidence": late + " (after the window)"},
    }
    monkeypatch.setattr(upgrade, "arm", lambda *a: (None, "checkpoint/offsets"))
    monkeypatch.setattr(upgrade, "settle", lambda *a: {**settled_late, "outcome": "happened"})
    target = _Windowed()
    value = {"from": "v1", "to": "v2", "signal": "window", "window": "after-offsets", "skip": 0}
    action = Action(1.0, "upgrade", "upgrade", value)
    nemesis = Upgrade(
        PlanInfo(roles={SUT.name: SUT}, versions=("v1", "v2"), windows=("after-offsets",))
    )
    assert nemesis.invoke(action, target)["outcome"] == "pending"  # type: ignore[arg-type]
    target.sut.ident = 101  # the supervisor started the next incarnation
    done = nemesis.resolve(action, target, 0.0)  # type: ignore[arg-type]
    assert done["outcome"] == "happened" and target.versions().current == "v2"
    assert done["effect"]["effect"] is False, done  # the upgrade happened, not inside the window
    assert done["effect"]["evidence"].startswith("100 (v1) killed 5.0 ms after"), done


class _FakeWatch:
    """A watch that either never fired or killed (``result``)."""

    def __init__(self, result: dict[str, Any] | None) -> None:
        import threading

        self.stop, self.result = threading.Event(), result

    def join(self, timeout: float | None = None) -> None:
        pass


@pytest.mark.parametrize(("result", "after"), [(None, "v1"), ({"killed": 100}, "v2")])
def test_the_heal_takes_the_switch_back_only_when_the_window_never_opened(
    monkeypatch: pytest.MonkeyPatch, result: dict[str, Any] | None, after: str
) -> None:
    from sealcheck.nemeses import upgrade

    monkeypatch.setattr(upgrade, "arm", lambda *a: (_FakeWatch(result), "checkpoint/offsets"))
    target = _Windowed()
    value = {"from": "v1", "to": "v2", "signal": "window", "window": "after-offsets", "skip": 0}
    info = PlanInfo(roles={SUT.name: SUT}, versions=("v1", "v2"), windows=("after-offsets",))
    nemesis = Upgrade(info)
    nemesis.invoke(Action(1.0, "upgrade", "upgrade", value), target)  # type: ignore[arg-type]
    assert target.versions().current == "v2"
    [said] = nemesis.heal(target)  # type: ignore[arg-type]
    assert target.versions().current == after, said
