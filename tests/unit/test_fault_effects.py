"""A fault counts only when it bit: each action's effect is judged from its evidence (the
nemesis op's ``effect``, or the supervisor's ``sut-exit`` ops), and window coverage counts
an action as reached only with that evidence — "happened, no effect" otherwise. (Unit tests:
the nemesis target, node and lazy disk are fakes that record what was asked of them.)"""

from __future__ import annotations

import random
import signal
import subprocess
import time
from typing import Any

from sealcheck.core.roles import SUT, by_name
from sealcheck.harness.run.exits import exit_evidence
from sealcheck.infra.node import broker_role
from sealcheck.nemeses import Action, PlanInfo
from sealcheck.nemeses.coverage import coverage
from sealcheck.nemeses.evidence import judge
from sealcheck.nemeses.kill import Kill
from sealcheck.nemeses.lost_writes import LostWrites
from sealcheck.nemeses.pause import Pause, proc_state
from sealcheck.rundir.coverage import summary


def roles(brokers: int = 1) -> dict:
    """A run's roles: its incarnation and ``brokers`` brokers."""
    return by_name(SUT, broker_role(brokers))


class FakeNode:
    """The sut node: pid 42 while running; records freezes, thaws and kills."""

    name = "sut"

    def __init__(self, running: bool = True, pid: int = 42) -> None:
        self.running, self.pid = running, pid
        self.calls: list[str] = []
        self.frozen = False

    @property
    def alive(self) -> bool:
        return self.running

    def start(self) -> None:
        return None

    def kill(self) -> int | None:
        self.calls.append("kill")
        return self.pid if self.running else None

    def pause(self) -> int | None:
        self.calls.append("pause")
        self.frozen = self.running
        return self.pid if self.running else None

    def resume(self) -> int | None:
        self.calls.append("resume")
        was, self.frozen = self.frozen, False
        return self.pid if was else None


class FakeDisk:
    """A lazy disk whose counters show ``kept`` (one value per look, the last one repeated)
    and whose drop loses what is kept at that moment."""

    def __init__(self, kept: list[int]) -> None:
        self.kept, self.looks = list(kept), 0

    def _now(self) -> int:
        return self.kept[min(self.looks, len(self.kept) - 1)]

    def counters(self) -> dict[str, Any]:
        now = self._now()
        self.looks += 1
        return {"kept_bytes": now, "kept_files": 1 if now else 0}

    def drop(self) -> dict[str, Any]:
        lost = self.kept[min(self.looks - 1, len(self.kept) - 1)] if self.looks else self._now()
        paths = ["/store.db-wal"] if lost else []
        return {"dropped": {"files": len(paths), "bytes": lost, "paths": paths}}


class FakeTarget:
    """One sut node and the store's lazy disk."""

    partitions = None

    def __init__(self, node: FakeNode, disk: FakeDisk) -> None:
        self.node, self.disk = node, disk

    def nodes(self, role: str) -> list[Any]:
        return [self.node] if role == "sut" else []

    def disks(self) -> dict[str, Any]:
        return {"store": self.disk}

    def sealed(self) -> int:
        return 0


def _op(action: int, f: str, value: dict[str, Any]) -> dict[str, Any]:
    return {"process": "nemesis", "type": "info", "f": f, "value": {"action": action, **value}}


def _exit(pid: int, code: int, **more: Any) -> dict[str, Any]:
    value = {"incarnation": pid - 40, "pid": pid, "code": code, "failpoint": None, **more}
    return {"process": "supervisor", "type": "info", "f": "sut-exit", "value": value}


CUT = Action(1.0, "lost-writes", "lose-unsynced", {"disk": "store", "wait_s": 0.0})
CUT_META = {"windows": {}, "schedule": [CUT.to_json()]}


def test_a_power_cut_that_dropped_nothing_is_not_counted_as_reached() -> None:
    node, disk = FakeNode(), FakeDisk([0])
    done = LostWrites(PlanInfo(roles=roles(1))).invoke(CUT, FakeTarget(node, disk))
    assert done["outcome"] == "happened" and done["dropped_bytes"] == 0
    assert done["effect"] == {
        "effect": False,
        "evidence": "no un-fsynced data when the power was cut",
    }
    assert node.calls == ["pause", "kill", "resume"]  # cut at once: its wait was over
    [row] = coverage(CUT_META, [_op(0, CUT.f, done), _exit(42, -9)])
    assert (row.planned, row.hit, row.no_effect, row.missed) == (1, 0, 1, 0)
    assert summary([row], {}) == [
        "window coverage: faults reached with evidence: lose-unsynced 0/1 (1 happened, no effect)"
    ]


def test_a_power_cut_waits_for_unsynced_data_and_counts_when_it_dropped_bytes() -> None:
    node, disk = FakeNode(), FakeDisk([0, 0, 4096])
    cut = Action(1.0, "lost-writes", "lose-unsynced", {"disk": "store", "wait_s": 5.0})
    done = LostWrites(PlanInfo(roles=roles(1))).invoke(cut, FakeTarget(node, disk))
    assert done["dropped_bytes"] == 4096 and done["pending_bytes"] == 4096
    assert (
        done["effect"]["effect"] is True and "4096 un-fsynced bytes" in done["effect"]["evidence"]
    )
    assert done["waited_s"] < 5.0  # it cut as soon as something was pending, not at the end
    meta = {"windows": {}, "schedule": [cut.to_json()]}
    [row] = coverage(meta, [_op(0, cut.f, done), _exit(42, -9)])
    assert (row.planned, row.hit, row.no_effect) == (1, 1, 0)
    assert summary([row], {}) == [
        "window coverage: faults reached with evidence: lose-unsynced 1/1"
    ]


def test_a_power_cut_thaws_and_looks_again_when_the_data_was_fsynced_before_the_freeze() -> None:
    node, disk = FakeNode(), FakeDisk([4096, 0, 0, 8192])  # seen, then fsynced under the freeze
    cut = Action(1.0, "lost-writes", "lose-unsynced", {"disk": "store", "wait_s": 5.0})
    done = LostWrites(PlanInfo(roles=roles(1))).invoke(cut, FakeTarget(node, disk))
    assert node.calls == ["pause", "resume", "pause", "kill", "resume"]
    assert done["dropped_bytes"] == 8192 and done["effect"]["effect"] is True


def test_a_power_cut_never_waits_past_its_window() -> None:
    node, disk = FakeNode(), FakeDisk([0])
    cut = Action(1.0, "lost-writes", "lose-unsynced", {"disk": "store", "wait_s": 0.2})
    began = time.monotonic()
    done = LostWrites(PlanInfo(roles=roles(1))).invoke(cut, FakeTarget(node, disk))
    assert time.monotonic() - began < 2.0 and done["effect"]["effect"] is False
    planned = LostWrites(PlanInfo(roles=roles(1))).plan(random.Random(4), 30.0, 3.0)
    [action] = planned
    assert 30.0 <= action.at_s <= 31.5 and action.at_s + action.value["wait_s"] <= 33.0


def test_a_kill_counts_only_when_the_incarnation_exited_by_sigkill() -> None:
    kill = Action(1.0, "kill", "kill-sut", {})
    meta = {"windows": {}, "schedule": [kill.to_json(), kill.to_json()]}
    done = Kill("kill", "sut", PlanInfo(roles=roles(1))).invoke(
        kill, FakeTarget(FakeNode(), FakeDisk([0]))
    )
    assert done == {"killed": 42, "outcome": "happened"}  # the evidence comes with the exit
    ops = [_op(0, kill.f, done), _exit(42, -9, signal="SIGKILL")]
    ops += [_op(1, kill.f, {"killed": 43, "outcome": "happened"}), _exit(43, 0)]  # exited first
    [row] = coverage(meta, ops)
    assert (row.planned, row.hit, row.no_effect) == (2, 1, 1)
    assert row.evidence == "43: exit 0"
    assert judge(kill.f, {}, done, [ops[1]["value"]])["evidence"] == "42: exit -9 (SIGKILL)"


def test_a_failpoint_window_is_hit_only_when_the_exit_names_it_and_matches_its_action() -> None:
    arm = {"at_s": 1.0, "nemesis": "failpoint", "f": "arm-failpoint"}
    meta = {
        "windows": {"a.mid": "inside a", "b.mid": "inside b"},
        "schedule": [
            {**arm, "value": {"failpoint": "a.mid"}},
            {**arm, "value": {"failpoint": "b.mid"}},
        ],
    }
    ops = [
        _op(0, "outcome", {"outcome": "happened", "fired": "a.mid"}),
        _exit(42, -9, failpoint="a.mid"),
        _op(1, "outcome", {"outcome": "happened", "fired": "b.mid"}),
        _exit(43, 1, failpoint="b.mid"),  # named, but not the SIGKILL a crash is
    ]
    rows = {w.name: (w.planned, w.hit, w.no_effect) for w in coverage(meta, ops)}
    assert rows == {"a.mid": (1, 1, 0), "b.mid": (1, 0, 1)}
    assert summary(coverage(meta, ops), meta["windows"]) == [
        "window coverage: 1/2 failpoints reached (not reached: b.mid; happened, no effect: b.mid)"
    ]


def test_a_zombie_counts_when_it_attempted_a_write_after_its_successor_started() -> None:
    start = {"zombie": 42, "outcome": "happened"}
    fenced = [_exit(42, 3, zombie=True, last_event="fenced")["value"]]
    assert judge("zombie-start", {}, start, fenced)["effect"] is True
    quiet = [_exit(42, -9, zombie=True, last_event="failpoint")["value"]]
    assert judge("zombie-start", {}, start, quiet)["effect"] is False
    release = {"released": [{"zombie": 42, "code": 3, "killed": False}], "outcome": "happened"}
    assert judge("zombie-release", {}, release, fenced)["effect"] is True


def test_an_indeterminate_commit_counts_when_its_error_fired_after_the_write() -> None:
    done = {"outcome": "happened", "fired": "data.after_commit"}
    fired = {"failpoint": "data.after_commit", "action": "error"}
    exits = [_exit(42, 1, fired=fired)["value"]]
    bit = judge("fail-commit-reply", {"failpoint": "data.after_commit"}, done, exits)
    assert bit["effect"] is True and "the write was applied" in bit["evidence"]
    assert judge("fail-commit-reply", {}, done, [_exit(42, -9)["value"]])["effect"] is False
    unseen = judge("cut-commit-reply", {}, {"outcome": "happened"}, [])
    assert unseen["effect"] is None and "not observable" in unseen["evidence"]


def test_the_exit_op_records_the_signal_the_failpoint_and_the_last_event() -> None:
    log = "\n".join(
        [
            "spark says hello",
            '{"event": "sealed", "t": 4}',
            '{"action": "sleep", "event": "failpoint", "name": "data.before_append", "pass": 1}',
            '{"event": "fenced", "error": "upper moved"}',
            '{"event": "sea',  # torn by the kill
        ]
    )
    assert exit_evidence(3, log) == {
        "fired": {"failpoint": "data.before_append", "action": "sleep"},
        "last_event": "fenced",
    }
    assert exit_evidence(-9, "") == {"signal": "SIGKILL"}


def test_a_pause_reads_the_stopped_state_of_the_process_it_froze() -> None:
    proc = subprocess.Popen(["sleep", "30"])
    try:

        class Real(FakeNode):
            def pause(self) -> int:
                proc.send_signal(signal.SIGSTOP)
                deadline = time.monotonic() + 5
                while proc_state(proc.pid) != "T" and time.monotonic() < deadline:
                    time.sleep(0.01)  # as the backends do: return once the kernel says stopped
                return proc.pid

        pause = Action(1.0, "pause", "pause-sut", {})
        done = Pause("pause", "sut", PlanInfo(roles=roles(1))).invoke(
            pause, FakeTarget(Real(), FakeDisk([0]))
        )
        assert done["effect"] == {
            "effect": True,
            "evidence": f"pid {proc.pid} stopped (state T) after the SIGSTOP",
        }
    finally:
        proc.kill()
        proc.wait()
    # a process whose cgroup the freezer holds (a paused container) sleeps, it is not in T
    import sealcheck.nemeses.pause as pause_module

    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        original = pause_module.cgroup_frozen
        pause_module.cgroup_frozen = lambda pid: pid == sleeper.pid
        try:
            seen = pause_module.frozen_effect(FakeNode(pid=sleeper.pid), sleeper.pid, True)
        finally:
            pause_module.cgroup_frozen = original
        assert seen["effect"] is True and "in a frozen cgroup (state " in seen["evidence"]
        thawed = pause_module.frozen_effect(FakeNode(pid=sleeper.pid), sleeper.pid, True)
        assert thawed["effect"] is False and "running" in thawed["evidence"]
    finally:
        sleeper.kill()
        sleeper.wait()
    node = FakeNode(pid=10**9)  # no such process: the node's own flag is the evidence
    done = Pause("pause", "sut", PlanInfo(roles=roles(1))).invoke(
        pause, FakeTarget(node, FakeDisk([0]))
    )
    assert done["effect"]["effect"] is True and "frozen=True" in done["effect"]["evidence"]


def test_a_broker_kill_counts_when_the_broker_is_down_afterwards() -> None:
    class Broker(FakeNode):
        name = "kafka-1"

        def kill(self) -> int | None:
            was, self.running = self.running, False  # dead as soon as it is killed
            return self.pid if was else None

    class Brokers(FakeTarget):
        def nodes(self, role: str) -> list[Any]:
            return [self.node] if role == "broker" else []

    kill = Action(1.0, "kill-kafka", "kill-broker", {"broker": 0})
    nemesis = Kill("kill-kafka", "broker", PlanInfo(roles=roles(1)))
    done = nemesis.invoke(kill, Brokers(Broker(), FakeDisk([0])))
    assert done["effect"]["effect"] is True and "kafka-1 down" in done["effect"]["evidence"]
    from sealcheck.nemeses.kill import down_effect

    stuck = down_effect(FakeNode(), 42, wait_s=0.0)  # still running the process it killed
    assert stuck["effect"] is False and "still ran 42" in stuck["evidence"]
