"""Roles as values: each run's roles come from whoever provides the nodes, the nemeses read
them (how many, which key names one, whether a kill heals itself, which links can be cut), and
a fault aimed at a role the run lacks is refused before the run, in one line."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from sealcheck.core.roles import SUT, Role, by_name, links
from sealcheck.harness.run.config import ConfigError
from sealcheck.harness.run.test import load_test
from sealcheck.infra.node import DATABASE, broker_role
from sealcheck.nemeses import NEMESES, Action, PlanInfo
from sealcheck.nemeses.kill import Kill
from sealcheck.nemeses.partition import Partition
from sealcheck.nemeses.registry import build, lacking, marks
from sealcheck.rundir.history import History
from sealcheck.rundir.history_writer import HistoryWriter
from sealcheck.systems import every_role, run_roles, system


def test_a_run_has_the_roles_its_providers_declare_and_the_system_uses() -> None:
    pipeline, delta = system("upsert-source"), system("delta-streaming")
    on_containers = run_roles(pipeline, "containers", 3, "connect")
    assert list(on_containers) == ["sut", "broker", "database"]
    assert on_containers["broker"] == Role("broker", 3, "broker", link="kafka")
    assert on_containers["database"] is DATABASE
    # the containers backend runs PostgreSQL, but the job keeps no store there: no such role
    assert list(run_roles(delta, "containers", 3, "connect")) == ["sut", "broker"]
    assert list(run_roles(pipeline, "local", 1, "connect")) == ["sut", "broker"]
    assert run_roles(pipeline, "local", 1, "connect")["broker"].count == 1
    # a Spark cluster's roles only where the run has one
    cluster = run_roles(delta, "local", 1, "cluster")
    assert list(cluster) == ["sut", "broker", "spark-worker", "spark-executor"]
    executor = cluster["spark-executor"]
    assert (executor.count, executor.index_key, executor.self_healing) == (2, "worker", True)
    assert executor.requires == {"spark-cluster"} and executor.word == "executor"
    assert SUT.self_healing and SUT.count == 1 and SUT.index_key is None
    assert set(every_role()) == {"sut", "broker", "database", "spark-worker", "spark-executor"}


def test_kill_reads_its_role_how_many_which_key_and_whether_it_heals_itself() -> None:
    roles = every_role()
    info = PlanInfo(roles=roles)
    brokers = Kill("kill-kafka", "broker", info)
    plan = brokers.plan(random.Random(1), 10.0, 4.0)
    assert [a.f for a in plan] == ["kill-broker", "start-broker"]
    assert plan[0].value["broker"] in range(3) and plan[0].value == plan[1].value
    assert brokers.marks["kill-broker"].kind == "start"
    assert brokers.marks["kill-broker"].which == ("broker",)
    sut = Kill("kill", "sut", info)
    (kill,) = sut.plan(random.Random(1), 10.0, 4.0)
    assert kill.f == "kill-sut" and kill.value == {}
    assert sut.marks == {"kill-sut": sut.marks["kill-sut"]}
    assert sut.marks["kill-sut"].kind == "instant" and sut.marks["kill-sut"].label == "kill"
    database = Kill("kill-postgres", "database", info)
    assert database.requires == {"database"} and database.roles == {"database"}
    assert [a.f for a in database.plan(random.Random(1), 0.0, 4.0)] == [
        "kill-postgres",
        "start-postgres",
    ]
    # a role with one node more or less changes how many the plan picks from
    one = Kill("kill-kafka", "broker", PlanInfo(roles=by_name(SUT, broker_role(1))))
    assert {a.value["broker"] for s in range(20) for a in one.plan(random.Random(s), 0, 4)} == {0}


def test_a_role_the_run_lacks_plans_nothing_and_is_named() -> None:
    info = PlanInfo(roles=by_name(SUT, broker_role(3)))
    nemeses = build(["kill-postgres", "kill", "kill-executor", "lose-commit-reply"], info)
    assert nemeses["kill-postgres"].plan(random.Random(1), 0.0, 4.0) == []
    assert {n: lacking(m, info) for n, m in nemeses.items()} == {
        "kill-postgres": ["database"],
        "kill": [],
        "kill-executor": ["spark-executor"],
        "lose-commit-reply": ["database"],
    }


def test_partition_kinds_follow_the_run_s_roles() -> None:
    with_db = Partition(PlanInfo(roles=by_name(SUT, broker_role(3), DATABASE)))
    assert with_db.kinds == ["sut-kafka", "sut-database", "broker"]
    without = Partition(PlanInfo(roles=by_name(SUT, broker_role(1))))
    assert without.kinds == ["sut-kafka"]  # no database role, one broker: nothing else to cut
    assert links(by_name(SUT, broker_role(3), DATABASE)) == ["sut-kafka", "sut-database"]
    kinds = {
        a.value["kind"] for seed in range(30) for a in without.plan(random.Random(seed), 0.0, 3.0)
    }
    assert kinds == {"sut-kafka"}


def test_stored_schedules_and_histories_with_the_old_names_still_read(tmp_path: Path) -> None:
    old = {"at_s": 1.0, "nemesis": "kill", "f": "kill-pipeline", "value": {}}
    assert Action.from_json(old) == Action(1.0, "kill", "kill-sut")
    cut = {"at_s": 2.0, "nemesis": "partition", "f": "start-partition"}
    for was, now in (("pipeline-kafka", "sut-kafka"), ("pipeline-postgres", "sut-database")):
        action = Action.from_json({**cut, "value": {"kind": was, "broker": 1}})
        assert action.value == {"kind": now, "broker": 1}
    writer = HistoryWriter(tmp_path / "history.jsonl")
    for f in ("kill-pipeline", "pause-pipeline", "resume-pipeline"):
        writer.append("nemesis", "info", f, {})
    writer.close()
    loaded = [o["f"] for o in History.load(tmp_path / "history.jsonl").ops]
    assert loaded == ["kill-sut", "pause-sut", "resume-sut"]  # the names the timeline draws
    drawn = marks(every_role())
    assert all(f in drawn for f in loaded)
    assert drawn["resume-sut"].opens == "pause-sut"
    assert drawn["kill-broker"].which == ("broker",)
    assert drawn["kill-spark-worker"].which == ("worker",)
    assert drawn["start-partition"].which == ("broker", "kind")


@pytest.mark.parametrize(
    ("overrides", "says"),
    [
        (
            {"system": "delta-streaming", "backend": "containers", "nemeses": ["kill-postgres"]},
            "nemesis 'kill-postgres' acts on the database role, which a run of "
            "'delta-streaming' on the containers backend does not have: it needs a database "
            "server the system under test keeps its store in (the containers backend's "
            "PostgreSQL); use --system upsert-source",
        ),
        (
            {
                "system": "delta-streaming",
                "backend": "containers",
                "nemeses": ["lose-commit-reply"],
            },
            "nemesis 'lose-commit-reply' acts on the database role",
        ),
        (
            {"backend": "local", "nemeses": ["kill", "kill-postgres"]},
            "nemesis 'kill-postgres' acts on the database role, which a run of 'upsert-source' on "
            "the local backend does not have",
        ),
        ({"nemeses": ["kill-executor"]}, "add --spark cluster"),
    ],
)
def test_a_fault_the_run_cannot_host_is_refused_in_one_line(
    overrides: dict[str, object], says: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        load_test(None, overrides)
    line = str(refused.value)
    assert says in line and "\n" not in line
    if overrides.get("backend") == "local" and "kill-postgres" in str(overrides["nemeses"]):
        assert line.endswith("; use --backend containers")


def test_what_the_run_can_host_is_accepted_and_planned_against_its_roles() -> None:
    delta = {"system": "delta-streaming", "backend": "containers", "nemeses": ["partition"]}
    test = load_test(None, {**delta, "duration_s": 120.0, "nemesis_interval_s": 3.0})
    kinds = {a.value["kind"] for a in test.schedule if a.f == "start-partition"}
    assert kinds and "sut-database" not in kinds  # only links the job has
    pipeline = load_test(None, {"backend": "containers", "nemeses": ["kill-postgres"]})
    assert [a.f for a in pipeline.schedule][:2] == ["kill-postgres", "start-postgres"]
    assert set(pipeline.plan_info.roles) == {"sut", "broker", "database"}
    assert all(NEMESES[n](PlanInfo(roles=every_role())).marks for n in NEMESES)
