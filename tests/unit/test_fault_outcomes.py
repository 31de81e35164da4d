"""Every planned fault says whether it happened: a failpoint that has not fired when the next
fault is due is disarmed and replaced by a kill; a fault with nothing to act on is skipped
with a reason. (Unit tests: the target is a fake that records what was asked of it.)"""

from __future__ import annotations

from typing import Any

from harness.report import outcomes
from nemeses import Action, PlanInfo
from nemeses.failpoint import Failpoint
from nemeses.kill import Kill
from nemeses.pause import Pause


class FakeTarget:
    """The pipeline half of a target: a failpoint file that the 'pipeline' may consume."""

    brokers = 1

    def __init__(self, running: bool = True) -> None:
        self.armed: str | None = None
        self.running = running
        self.calls: list[str] = []

    def arm_failpoint(self, spec: str) -> dict[str, Any]:
        self.armed = spec
        return {"armed": spec}

    def failpoint_armed(self) -> bool:
        return self.armed is not None

    def disarm_failpoints(self) -> bool:
        was, self.armed = self.armed is not None, None
        self.calls.append("disarm")
        return was

    def pipeline_kill(self) -> dict[str, Any]:
        self.calls.append("kill")
        return {"killed": 42 if self.running else None}

    def pipeline_pause(self) -> dict[str, Any]:
        return {"paused": 42 if self.running else None}

    def pipeline_resume(self) -> dict[str, Any]:
        return {"resumed": None}


ARM = Action(1.0, "failpoint", "arm-failpoint", {"failpoint": "compact.mid", "restart": False})


def test_a_failpoint_that_fired_happened() -> None:
    target, nemesis = FakeTarget(), Failpoint(PlanInfo(1, ("compact.mid",)))
    assert nemesis.invoke(ARM, target)["outcome"] == "pending"
    target.armed = None  # the pipeline passed the point: it consumed the file and crashed
    assert nemesis.resolve(ARM, target, 3.0) == {"outcome": "happened", "fired": "compact.mid"}
    assert target.calls == []


def test_a_failpoint_that_did_not_fire_is_replaced_by_a_kill() -> None:
    target, nemesis = FakeTarget(), Failpoint(PlanInfo(1, ("compact.mid",)))
    nemesis.invoke(ARM, target)
    done = nemesis.resolve(ARM, target, 6.5)
    assert done["outcome"] == "replaced-by-kill" and done["killed"] == 42
    assert "did not pass compact.mid within 6.5s" in done["why"]
    assert target.calls == ["disarm", "kill"] and target.armed is None


def test_a_replacement_kill_with_nothing_running_is_skipped_with_a_reason() -> None:
    target, nemesis = FakeTarget(running=False), Failpoint(PlanInfo(1, ("compact.mid",)))
    nemesis.invoke(ARM, target)
    done = nemesis.resolve(ARM, target, 2.0)
    assert done["outcome"] == "skipped" and "no pipeline incarnation" in done["why"]


def test_kill_and_pause_say_when_they_had_nothing_to_act_on() -> None:
    kill = Action(1.0, "kill", "kill-pipeline", {})
    assert Kill().invoke(kill, FakeTarget())["outcome"] == "happened"
    skipped = Kill().invoke(kill, FakeTarget(running=False))
    assert skipped["outcome"] == "skipped" and skipped["why"]
    resume = Action(2.0, "pause", "resume-pipeline", {})
    assert Pause().invoke(resume, FakeTarget())["outcome"] == "skipped"


def test_the_report_shows_each_action_s_final_outcome() -> None:
    ops = [
        {"process": "nemesis", "type": "invoke", "f": "arm-failpoint", "value": {"action": 0}},
        {
            "process": "nemesis",
            "type": "info",
            "f": "arm-failpoint",
            "value": {"action": 0, "outcome": "pending"},
        },
        {
            "process": "nemesis",
            "type": "info",
            "f": "outcome",
            "value": {"action": 0, "outcome": "replaced-by-kill", "why": "late"},
        },
        {
            "process": "nemesis",
            "type": "info",
            "f": "kill-pipeline",
            "value": {"action": 1, "outcome": "happened"},
        },
    ]
    got = outcomes(ops)
    assert got[0]["outcome"] == "replaced-by-kill" and got[1]["outcome"] == "happened"
