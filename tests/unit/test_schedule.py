"""The fault schedule is planned in full from the seed: same seed, same actions; saved and
replayed as is; the failpoint nemesis covers every failpoint before repeating one."""

from __future__ import annotations

import itertools
import json

import pytest

from sealcheck.core.failpoints import FailpointCatalogue
from sealcheck.core.roles import SUT, by_name
from sealcheck.harness.run.config import TestConfig, WorkloadConfig
from sealcheck.harness.run.test import build_test as make_plan
from sealcheck.harness.run.workload import records
from sealcheck.infra.node import broker_role
from sealcheck.nemeses import NEMESES, Action, PlanInfo, describe, plan_schedule
from sealcheck.systems.roles import every_role
from sealcheck_upsert_source.failpoints import FAILPOINTS

INFO = PlanInfo(
    roles=every_role(),  # every role any run may have, three brokers
    failpoints=FailpointCatalogue(
        tuple(FAILPOINTS),
        startup=frozenset({"rehydrate.mid"}),
        commit=("data.after_commit",),
        stall="data.before_append",
    ),
    windows=("after-offsets", "after-commit:data"),
    boundaries=("after-offsets:closing", "after-offsets:opened"),
    versions=("v1", "v2"),
)


def test_same_seed_same_schedule_and_workload() -> None:
    cfg = TestConfig(seed=7, nemeses=tuple(NEMESES), duration_s=120)
    a, b = make_plan(cfg), make_plan(cfg)
    assert a.schedule == b.schedule and a.producer_seeds == b.producer_seeds
    other = make_plan(TestConfig(seed=8, nemeses=tuple(NEMESES), duration_s=120))
    assert other.schedule != a.schedule
    mix = WorkloadConfig().mix()
    import itertools
    import random

    first = list(itertools.islice(records(random.Random(a.producer_seeds[0]), mix, "w0"), 500))
    again = list(itertools.islice(records(random.Random(b.producer_seeds[0]), mix, "w0"), 500))
    assert first == again


def test_schedule_round_trips_through_json() -> None:
    actions = plan_schedule(list(NEMESES), 3, 100, 5, INFO)
    saved = json.loads(json.dumps([a.to_json() for a in actions]))
    assert [Action.from_json(d) for d in saved] == actions
    assert len(describe(actions)) == len(actions)


def test_every_nemesis_gets_windows_and_actions_are_in_order() -> None:
    actions = plan_schedule(list(NEMESES), 5, 200, 5, INFO)
    assert {a.nemesis for a in actions} == set(NEMESES)
    assert [a.at_s for a in actions] == sorted(a.at_s for a in actions)
    assert all(5 <= a.at_s < 200 for a in actions)


def test_failpoints_are_covered_before_any_repeats() -> None:
    n = len(FAILPOINTS)
    actions = plan_schedule(["failpoint"], 11, (n + 1) * 4, 4, INFO)
    points = [a.value["failpoint"] for a in actions]
    assert sorted(points[:n]) == sorted(FAILPOINTS)
    assert all(a.value["restart"] == (a.value["failpoint"] == "rehydrate.mid") for a in actions)


def test_intervals_close_inside_their_window() -> None:
    for a in plan_schedule(["pause", "kill-kafka"], 2, 100, 10, INFO):
        assert 0 < a.at_s < 100
    pairs = plan_schedule(["pause"], 2, 30, 10, INFO)
    assert [a.f for a in pairs] == ["pause-sut", "resume-sut"] * 2


def test_unknown_nemesis_is_named() -> None:
    with pytest.raises(ValueError, match="unknown nemesis \\['explode'\\]"):
        plan_schedule(["explode"], 1, 10, 5, INFO)


def test_late_failpoints_close_each_cover_and_the_default_run_plans_them_all() -> None:
    from sealcheck.systems.upsert_source import UpsertSource

    late = UpsertSource.late_failpoints
    info = PlanInfo(
        roles=by_name(SUT, broker_role(3)),
        failpoints=FailpointCatalogue(
            tuple(FAILPOINTS), startup=frozenset({"rehydrate.mid"}), late=late
        ),
    )
    n = len(FAILPOINTS)
    for seed in range(5):
        actions = plan_schedule(["failpoint"], seed, (n + 1) * 4, 4, info)
        points = [a.value["failpoint"] for a in actions][:n]
        assert set(points[n - len(late) :]) == late
    # The default config gives the failpoint nemesis a window for every failpoint (any seed).
    for seed in range(1, 21):
        planned = {
            a.value["failpoint"]
            for a in make_plan(TestConfig(seed=seed)).schedule
            if a.f == "arm-failpoint"
        }
        assert planned == set(FAILPOINTS), seed


def test_a_nemesis_named_twice_gets_twice_the_windows() -> None:
    actions = plan_schedule(["kill", "pause", "kill"], 4, 310, 10, INFO)  # 30 windows
    kills = sum(a.f == "kill-sut" for a in actions)
    pauses = sum(a.f == "pause-sut" for a in actions)
    assert (kills, pauses) == (20, 10)


def test_broker_power_cuts_are_spaced_so_each_has_something_to_lose() -> None:
    plan = plan_schedule(["lost-writes-kafka"], 4, 100, 3, INFO)
    cuts = [a for a in plan if a.f == "power-cut-broker"]
    ons = [a for a in plan if a.f == "power-on-broker"]
    assert len(cuts) == len(ons) >= 4  # 97 s of 3 s windows, one cut per 20 s
    gaps = [b.at_s - a.at_s for a, b in itertools.pairwise(cuts)]
    assert min(gaps) >= 20.0
    for cut, on in zip(cuts, ons, strict=True):
        assert cut.at_s < on.at_s and cut.value == on.value  # the same broker powers on
        assert 0 <= cut.value["broker"] < 3
    assert plan == plan_schedule(["lost-writes-kafka"], 4, 100, 3, INFO)  # from the seed


def test_a_nemesis_asked_for_and_given_no_fault_is_named_with_the_duration_that_gives_one() -> None:
    from sealcheck.nemeses.schedule import unplanned

    cfg = TestConfig(nemeses=("kill", "window"), duration_s=60, nemesis_interval_s=30)
    info = PlanInfo(roles=every_role(), windows=("after-offsets",))
    actions = plan_schedule(cfg.nemeses, 7, cfg.duration_s, cfg.nemesis_interval_s, info)
    assert len(actions) == 1  # the first window is quiet: one window holds one fault
    missing = "window" if actions[0].nemesis == "kill" else "kill"
    assert unplanned(cfg.nemeses, actions, 60, 30) == (
        f"no fault planned for {missing}: 60 s of faults in 30 s windows hold 1 fault (the first "
        "window is quiet; one nemesis a window, in turns); give --duration 90 or more for one "
        "of each"
    )
    longer = plan_schedule(cfg.nemeses, 7, 90, 30, info)
    assert unplanned(cfg.nemeses, longer, 90, 30) is None
