"""Every planned fault says whether it happened: a failpoint that has not fired when the next
fault is due is disarmed and replaced by a kill; a fault with nothing to act on is skipped
with a reason. (Unit tests: the target is a fake that records what was asked of it.)"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

from sealcheck.core.failpoints import FailpointCatalogue
from sealcheck.core.roles import SUT, by_name
from sealcheck.infra.node import broker_role
from sealcheck.nemeses import Action, PlanInfo
from sealcheck.nemeses.commit_reply import LoseCommitReply
from sealcheck.nemeses.failpoint import Failpoint
from sealcheck.nemeses.kill import Kill
from sealcheck.nemeses.pause import Pause
from sealcheck.rundir.coverage import outcomes


def roles(brokers: int = 1) -> dict:
    """A run's roles: its incarnation and ``brokers`` brokers."""
    return by_name(SUT, broker_role(brokers))


#: a plan for one failpoint, ``compact.mid``
COMPACT_MID = PlanInfo(roles=roles(1), failpoints=FailpointCatalogue(("compact.mid",)))


class FakeFailpoints:
    """A failpoint file that the 'pipeline' may consume."""

    def __init__(self) -> None:
        self.spec: str | None = None
        self.calls: list[str] = []

    def arm(self, spec: str) -> dict[str, Any]:
        self.spec = spec
        return {"armed": spec}

    def armed(self) -> bool:
        return self.spec is not None

    def disarm(self) -> bool:
        was, self.spec = self.spec is not None, None
        self.calls.append("disarm")
        return was


class FakePipeline:
    """The pipeline node: pid 42 when running."""

    name = "sut"

    def __init__(self, running: bool, calls: list[str]) -> None:
        self.running, self.calls = running, calls

    @property
    def alive(self) -> bool:
        return self.running

    def kill(self) -> int | None:
        self.calls.append("kill")
        return 42 if self.running else None

    def pause(self) -> int | None:
        return 42 if self.running else None

    def resume(self) -> int | None:
        return None

    def start(self) -> None:
        return None


class FakeTarget:
    """What the nemeses act on: one pipeline node and the failpoints."""

    partitions = None

    def __init__(self, running: bool = True) -> None:
        self.failpoints = FakeFailpoints()
        self.calls = self.failpoints.calls
        self.pipeline = FakePipeline(running, self.calls)

    @property
    def armed(self) -> str | None:
        return self.failpoints.spec

    def sealed(self) -> int:
        """A system that seals a step between any two looks (``stalled``: none)."""
        if not getattr(self, "stalled", False):
            self.steps = getattr(self, "steps", 0) + 1
        return getattr(self, "steps", 0)

    def nodes(self, role: str) -> list[Any]:
        return [self.pipeline] if role == "sut" else []


ARM = Action(1.0, "failpoint", "arm-failpoint", {"failpoint": "compact.mid", "restart": False})


def test_a_failpoint_that_fired_happened() -> None:
    target, nemesis = (
        FakeTarget(),
        Failpoint(COMPACT_MID),
    )
    assert nemesis.invoke(ARM, target)["outcome"] == "pending"
    target.failpoints.spec = None  # the pipeline passed the point: it consumed the file
    assert nemesis.resolve(ARM, target, 3.0) == {"outcome": "happened", "fired": "compact.mid"}
    assert target.calls == []


def test_a_failpoint_that_did_not_fire_is_replaced_by_a_kill() -> None:
    target, nemesis = (
        FakeTarget(),
        Failpoint(COMPACT_MID),
    )
    nemesis.invoke(ARM, target)
    done = nemesis.resolve(ARM, target, 6.5)
    assert done["outcome"] == "replaced-by-kill" and done["killed"] == 42
    assert "did not pass compact.mid within 6." in done["why"]  # 6.5 s and a look
    assert target.calls == ["disarm", "kill"] and target.armed is None


def test_a_replacement_kill_with_nothing_running_is_skipped_with_a_reason() -> None:
    target, nemesis = (
        FakeTarget(running=False),
        Failpoint(COMPACT_MID),
    )
    nemesis.invoke(ARM, target)
    done = nemesis.resolve(ARM, target, 2.0)
    assert done["outcome"] == "skipped" and "no incarnation" in done["why"]


class FakeCuts:
    """Network cuts whose commit-reply cut arms when the test says so."""

    def __init__(self, incarnation: bool = True) -> None:
        self.incarnation, self.armed, self.placed = incarnation, False, False

    def cut(self, kind: str, broker: int) -> dict[str, Any]:
        if not self.incarnation:
            return {"cut": None, "reason": "no incarnation running"}
        self.placed = True
        return {"cut": kind, "pid": 7, "rules": 4}

    def fired(self, kind: str) -> bool:
        return self.armed

    def restore(self, kind: str, broker: int) -> dict[str, Any]:
        was, self.placed = self.placed, False
        return {"healed": kind if was else None, "deleted": 4 if was else 0}


def test_a_commit_reply_cut_happened_only_when_a_commit_armed_it() -> None:
    cut = Action(1.0, "lose-commit-reply", "cut-commit-reply", {})
    target, cuts = FakeTarget(), FakeCuts()
    target.partitions = cuts  # type: ignore[assignment]
    nemesis = LoseCommitReply(PlanInfo(roles=roles(1)))
    assert nemesis.invoke(cut, target)["outcome"] == "pending"
    done = nemesis.resolve(cut, target, 9.0)  # waited past WAIT_S already
    assert done["outcome"] == "not-reached" and "within 9.0s" in done["why"]
    assert not cuts.placed  # an unarmed cut is removed at once
    nemesis.invoke(cut, target)
    cuts.armed = True
    assert nemesis.resolve(cut, target, 3.0) == {"outcome": "happened"}
    assert cuts.placed  # it stays with the incarnation it caught ...
    assert nemesis.heal(target) == ["removed the commit-reply cut (4 rules)"]  # ... until healed
    target.partitions = FakeCuts(incarnation=False)  # type: ignore[assignment]
    skipped = nemesis.invoke(cut, target)
    assert skipped["outcome"] == "skipped" and "no incarnation" in skipped["why"]
    target.partitions = None
    assert nemesis.invoke(cut, target)["outcome"] == "skipped"


def test_kill_and_pause_say_when_they_had_nothing_to_act_on() -> None:
    kill = Action(1.0, "kill", "kill-sut", {})
    info = PlanInfo(roles=roles(1))
    assert Kill("kill", "sut", info).invoke(kill, FakeTarget())["outcome"] == "happened"
    skipped = Kill("kill", "sut", info).invoke(kill, FakeTarget(running=False))
    assert skipped["outcome"] == "skipped" and skipped["why"]
    resume = Action(2.0, "pause", "resume-sut", {})
    assert Pause("pause", "sut", info).invoke(resume, FakeTarget())["outcome"] == "skipped"


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


def test_window_coverage_counts_what_the_history_says_was_reached() -> None:
    from sealcheck.nemeses.coverage import coverage
    from sealcheck.rundir.coverage import unreached

    points = {"a.mid": "inside a", "b.mid": "inside b", "c.mid": "inside c"}
    meta = {
        "windows": points,
        "schedule": [
            {
                "at_s": 1.0,
                "nemesis": "failpoint",
                "f": "arm-failpoint",
                "value": {"failpoint": "a.mid"},
            },
            {
                "at_s": 2.0,
                "nemesis": "failpoint",
                "f": "arm-failpoint",
                "value": {"failpoint": "b.mid"},
            },
            {"at_s": 3.0, "nemesis": "kill", "f": "kill-pipeline", "value": {}},
        ],
    }

    def nem(action: int, outcome: str, **more: object) -> dict[str, object]:
        value = {"action": action, "outcome": outcome, **more}
        return {"process": "nemesis", "f": "x", "value": value}

    def exit_(failpoint: str | None, pid: int) -> dict[str, object]:
        value = {"failpoint": failpoint, "pid": pid, "code": -9}  # reached: with its evidence
        return {"process": "supervisor", "f": "sut-exit", "value": value}

    ops = [nem(0, "happened"), exit_("a.mid", 1), nem(1, "replaced-by-kill"), exit_(None, 2)]
    ops += [nem(2, "happened", killed=3), exit_(None, 3)]
    rows = {w.name: (w.planned, w.hit, w.missed) for w in coverage(meta, ops)}
    assert rows == {
        "a.mid": (1, 1, 0),
        "b.mid": (1, 0, 1),
        "c.mid": (0, 0, 0),
        "kill: kill-sut": (1, 1, 0),  # a stored schedule's old name, read as now
    }
    assert unreached(coverage(meta, ops), points) == ["b.mid", "c.mid"]


def test_a_failpoint_settled_early_still_gets_its_time_to_fire() -> None:
    """A runner behind its schedule settles an armed point at once; the point still has
    MIN_ARMED_S to fire before it is replaced by a kill."""
    import threading

    target, nemesis = (
        FakeTarget(),
        Failpoint(COMPACT_MID),
    )
    nemesis.invoke(ARM, target)
    consume = threading.Timer(0.3, lambda: setattr(target.failpoints, "spec", None))
    consume.start()
    assert nemesis.resolve(ARM, target, 0.0) == {"outcome": "happened", "fired": "compact.mid"}
    consume.join()
    nemesis.invoke(ARM, target)
    done = nemesis.resolve(ARM, target, 0.0)  # never consumed: replaced after 3 s armed
    assert done["outcome"] == "replaced-by-kill"
    waited = re.search(r"within (\d+\.\d)s", done["why"])  # 3.0 s, later on a loaded machine
    assert waited is not None and 3.0 <= float(waited[1]) < 20.0, done["why"]


def test_a_failpoint_waits_for_the_system_to_progress_before_it_is_replaced(
    monkeypatch: Any,
) -> None:
    """An incarnation still starting (nothing sealed since the point was armed) keeps the
    point armed past MIN_ARMED_S, up to MAX_ARMED_S."""

    from sealcheck.nemeses import api as nemeses_api

    monkeypatch.setattr(nemeses_api, "MAX_ARMED_S", 4.0)
    target, nemesis = (
        FakeTarget(),
        Failpoint(COMPACT_MID),
    )
    target.stalled = True  # type: ignore[attr-defined]
    nemesis.invoke(ARM, target)
    done = nemesis.resolve(ARM, target, 0.0)
    assert done["outcome"] == "replaced-by-kill"
    waited = re.search(r"within (\d+\.\d)s", done["why"])
    assert waited is not None and float(waited[1]) >= 4.0  # past MIN_ARMED_S, however loaded


def test_longer_windows_give_an_armed_point_longer_to_fire_and_a_zombie_a_longer_stall() -> None:
    """Windows of the pipeline (3 s) plan exactly as before; a system given 20 s windows
    (it restarts slowly) gets 30 s for a point to fire and a stall of up to 14 s."""
    import random

    from sealcheck.nemeses.api import chance_s
    from sealcheck.nemeses.zombie import Zombie

    assert chance_s(3.0) is None and chance_s(20.0) == 30.0
    info = PlanInfo(roles=roles(1), failpoints=FailpointCatalogue(("a.mid",), stall="a.mid"))
    short = Failpoint(info).plan(random.Random(1), 0.0, 3.0)[0]
    assert "chance_s" not in short.value
    assert Failpoint(info).plan(random.Random(1), 0.0, 20.0)[0].value["chance_s"] == 30.0
    start, release = Zombie(info).plan(random.Random(1), 0.0, 20.0)
    assert 11.0 < release.at_s - start.at_s <= 14.0 + 1e-9
    start, release = Zombie(info).plan(random.Random(1), 0.0, 3.0)
    assert 3.5 <= release.at_s - start.at_s <= 5.0


def test_a_zombie_stall_waits_for_progress_not_for_a_fixed_time() -> None:
    """An incarnation still starting (nothing sealed) is waited for; one that seals steps
    without reaching the stall point is given up after the least armed time, saying so."""
    import threading

    from sealcheck.nemeses.api import MIN_ARMED_S
    from sealcheck.nemeses.zombie import Zombie

    info = PlanInfo(roles=roles(1), failpoints=FailpointCatalogue(("a.mid",), stall="a.mid"))
    start = Action(0.0, "zombie", "zombie-start", {"failpoint": "a.mid", "stall_ms": 3500})
    sealing = FakeTarget()
    began = time.monotonic()
    skipped = Zombie(info).invoke(start, sealing)
    assert skipped["outcome"] == "skipped" and "no incarnation reached a.mid" in skipped["why"]
    assert time.monotonic() - began >= MIN_ARMED_S  # it had its chance first
    starting = FakeTarget()
    starting.stalled = True  # type: ignore[attr-defined]  # restarting: nothing sealed yet
    starting.pipeline.replace = lambda: 41  # type: ignore[attr-defined]
    starting.pipeline.release = lambda wait_s=20.0: []  # type: ignore[attr-defined]
    # the stall point is reached only after the least armed time: still waited for
    threading.Timer(MIN_ARMED_S + 1.0, lambda: setattr(starting.failpoints, "spec", None)).start()
    assert Zombie(info).invoke(start, starting) == {"zombie": 41, "outcome": "happened"}


def test_coverage_is_judged_into_results_json_and_the_report_renders_what_is_there(
    tmp_path: Path,
) -> None:
    """A boundary not reached keeps its reason; the judge writes the coverage into the run's
    results and the report draws that record, not a judgement of its own."""
    import json

    from sealcheck.harness.run.runner import results_doc
    from sealcheck.report.report import render
    from sealcheck.rundir.coverage import COVERAGE, from_json
    from tests.runs import stored_run

    run = stored_run(tmp_path)
    aim = {"boundary": "after-offsets:closing", "skip": 0}
    schedule = [{"at_s": 1.0, "nemesis": "boundary", "f": "crash-at-boundary", "value": aim}]
    (run / "test.json").write_text(json.dumps({"schedule": schedule}))
    why = "not reached: no before rename #1 of ^/checkpoint/commits/\\d+$ in 30.0s"
    op = {"process": "nemesis", "type": "info", "f": "crash-at-boundary",
          "value": {**aim, "action": 0, "outcome": "skipped", "why": why}}  # fmt: skip
    lines = [json.dumps({"index": 0, "time": 1, **op})]
    for i, line in enumerate((run / "history.jsonl").read_text().splitlines(), 1):
        lines.append(json.dumps({**json.loads(line), "index": i}))  # its line number
    (run / "history.jsonl").write_text("\n".join(lines) + "\n")
    doc = results_doc(run, {"valid": True})
    [row] = [w for w in from_json(doc[COVERAGE]) or [] if w.name.startswith("boundary")]
    assert (row.planned, row.hit, row.missed, row.why_missed) == (1, 0, 1, why)
    doc[COVERAGE][-1]["evidence"] = "as the judge recorded it"
    (run / "results.json").write_text(json.dumps(doc))
    page = render(run)
    assert "as the judge recorded it" in page and "missed: not reached: no before" in page


def test_a_crash_aimed_at_a_window_is_named_by_it_and_an_upgrade_made_there_by_both() -> None:
    from sealcheck.nemeses.coverage import coverage
    from sealcheck.rundir.coverage import summary

    crash = {"nemesis": "window", "f": "crash-in-window", "value": {"window": "after-offsets"}}
    back = {"from": "v2", "to": "v1", "signal": "window", "window": "after-offsets"}
    meta = {"schedule": [crash, {"nemesis": "rollback", "f": "rollback", "value": back}]}
    inside = {"effect": True, "evidence": "killed inside"}
    ops = [
        {
            "process": "nemesis",
            "f": "x",
            "value": {"action": i, "outcome": "happened", "effect": inside},
        }
        for i in (0, 1)
    ]
    windows = coverage(meta, ops)
    assert [w.name for w in windows] == [
        "rollback: rollback in after-offsets",
        "window: after-offsets",
    ]
    [line] = summary(windows, {})
    assert line.endswith("evidence: rollback in after-offsets 1/1, after-offsets 1/1"), line
