"""A fault counts only where the run has what it acts on: a stored schedule whose partition cuts
a link the run lacks is refused before the run (and skipped if it still reaches a nemesis), the
run's target serves no nodes of a role the run lacks, the default mix keeps only nemeses the run
can host, validation is one pass (the CLI refuses once, in one line, starting nothing), and the
report draws a run's actions by the roles the run recorded."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sealcheck.core.roles import BUILT_IN, SUT, Role, by_name, role_to_json, stored_roles
from sealcheck.harness.cli.app import main
from sealcheck.harness.run import runner
from sealcheck.harness.run.config import ConfigError, TestConfig, _hostable, load_config
from sealcheck.harness.run.target import RunTarget
from sealcheck.harness.run.test import build_test
from sealcheck.infra.node import broker_role
from sealcheck.nemeses import Action, PlanInfo
from sealcheck.nemeses.partition import Partition
from sealcheck.nemeses.registry import marks
from sealcheck.report.timeline import build_timeline
from sealcheck.rundir.history import History
from sealcheck.rundir.marks import MARKS, stored_marks
from sealcheck.systems import every_role, run_roles, system

#: a delta-streaming run on containers: its job keeps no store in PostgreSQL
DELTA = {"system": "delta-streaming", "backend": "containers", "nemeses": ["partition"]}
#: a partition of the database link, as runs stored before the rename spelled it
OLD_CUT = [
    {"at_s": 1.0, "nemesis": "partition", "f": "start-partition", "value": {}},
    {"at_s": 2.0, "nemesis": "partition", "f": "end-partition", "value": {}},
]


def _schedule(kind: str) -> list[Action]:
    value = {"kind": kind, "broker": 0}
    return [Action.from_json({**doc, "value": value}) for doc in OLD_CUT]


def test_a_replayed_cut_of_a_link_the_run_lacks_is_refused_in_one_line() -> None:
    test = build_test(load_config(None, DELTA), _schedule("pipeline-postgres"))
    with pytest.raises(ConfigError) as err:
        test.validate()
    text = str(err.value)
    assert "\n" not in text
    assert text.startswith("schedule action 0 (start-partition at 1s)")
    assert "'sut-database'" in text and "no such link" in text and "sut-kafka" in text
    # the same cut where the run has that link (the upsert source keeps its store there) fits
    upsert = {**DELTA, "system": "upsert-source"}
    build_test(load_config(None, upsert), _schedule("pipeline-postgres")).validate()
    # a broker cut needs three brokers
    one = build_test(load_config(None, {**upsert, "brokers": 1}), _schedule("broker"))
    with pytest.raises(ConfigError, match="cuts link 'broker', but the run has no such link"):
        one.validate()


class _Cuts:
    """Network cuts that record every call (none is expected)."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def cut(self, kind: str, broker: int) -> dict[str, Any]:
        self.calls.append(f"cut {kind}")
        return {"cut": kind}

    def restore(self, kind: str, broker: int) -> dict[str, Any]:
        self.calls.append(f"restore {kind}")
        return {"healed": kind}

    def heal(self) -> list[str]:
        return []


class _Target:
    def __init__(self) -> None:
        self.partitions = _Cuts()


def test_partition_skips_a_kind_that_is_not_a_link_of_the_run() -> None:
    nemesis = Partition(PlanInfo(roles=run_roles(system("delta-streaming"), "containers", 3, "")))
    assert nemesis.kinds == ["sut-kafka", "broker"]
    target = _Target()
    start, end = _schedule("sut-database")
    for action in (start, end):
        done = nemesis.invoke(action, target)  # type: ignore[arg-type]
        assert done["outcome"] == "skipped" and done["why"] == "the run has no such link"
    assert target.partitions.calls == []  # nothing was cut: not counted as happened
    (start, _) = _schedule("sut-kafka")
    assert nemesis.invoke(start, target)["outcome"] == "happened"  # type: ignore[arg-type]


class _Backend:
    """A backend that runs a database server whatever the run (the containers backend)."""

    def partitions(self) -> None:
        return None

    def nodes(self, role: str) -> list[str]:
        return [f"{role}-0"]


def test_the_run_target_serves_no_nodes_of_a_role_the_run_lacks() -> None:
    sut = object()
    target = RunTarget(_Backend(), sut, object(), ["sut", "broker"])  # type: ignore[arg-type]
    assert target.nodes("database") == []
    assert target.nodes("spark-worker") == []
    assert target.nodes("broker") == ["broker-0"]
    assert target.nodes("sut") == [sut] and target.sut is sut


def test_the_default_mix_leaves_out_nemeses_whose_role_the_run_lacks() -> None:
    mix = ("kill", "kill-postgres", "kill-kafka", "kill-spark-worker")
    delta = TestConfig(system="delta-streaming", backend="containers", brokers=3, nemeses=mix)
    assert _hostable(delta, system("delta-streaming")) == ("kill", "kill-kafka")
    upsert = TestConfig(system="upsert-source", backend="containers", brokers=3, nemeses=mix)
    assert _hostable(upsert, system("upsert-source")) == ("kill", "kill-postgres", "kill-kafka")


def test_the_cli_refuses_a_replay_once_in_one_line_starting_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stored = tmp_path / "stored"
    stored.mkdir()
    config = load_config(None, DELTA).to_json()
    schedule = [{**doc, "value": {"kind": "pipeline-postgres", "broker": 0}} for doc in OLD_CUT]
    (stored / "test.json").write_text(json.dumps({"config": config, "schedule": schedule}))

    def started(*_: object) -> None:
        raise AssertionError("the refused run started cleaning up")

    monkeypatch.setattr(runner, "sweep", started)
    runs = tmp_path / "runs"
    code = main(["run", "--replay", str(stored), "--runs", str(runs), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 254
    assert err.count("\n") == 1 and err.startswith(f"sealcheck run: cannot replay {stored}: ")
    assert "schedule action 0" in err and "no such link" in err
    assert not runs.exists()  # no run directory
    # the CLI builds; run_test validates (once)
    from sealcheck.harness.cli.run import _HELP, _built

    test = _built(load_config(None, DELTA), _schedule("sut-database"), None)
    assert test.spec.system == "delta-streaming"
    assert "default upsert-source" in _HELP["system"]


def test_plan_info_takes_its_fields_by_name() -> None:
    with pytest.raises(TypeError):
        PlanInfo(3)  # type: ignore[misc]  # the old first field, brokers
    assert PlanInfo(roles=by_name(SUT)).role("broker").count == 0


def test_a_run_records_its_roles_and_the_report_reads_them(tmp_path: Path) -> None:
    test = build_test(load_config(None, DELTA))
    meta = json.loads(json.dumps(runner.run_meta(test, Path("runs/x"))))
    assert [r["name"] for r in meta["roles"]] == ["sut", "broker"]
    assert stored_roles(meta["roles"]) == test.plan_info.roles
    # runs stored before recorded no roles: the built-in table, as the providers declare them
    assert stored_roles(None) == BUILT_IN == every_role()
    assert stored_roles([{"nonsense": 1}]) == BUILT_IN
    # the timeline draws a run's actions by the roles it recorded
    zk = Role("broker", 3, "broker", noun="zk", link="kafka")
    ops = [
        {"index": i, "time": t * 10**9, "process": "nemesis", "type": "invoke", "f": f}
        | {"value": {"broker": 1}}
        for i, (f, t) in enumerate((("kill-zk", 1), ("start-zk", 2)))
    ]
    (tmp_path / "history.jsonl").write_text("".join(json.dumps(o) + "\n" for o in ops))
    history = History.load(tmp_path / "history.jsonl")
    zk_marks = marks(stored_roles([role_to_json(SUT), role_to_json(zk)]))
    tl = build_timeline(history, zk_marks)
    assert [(m.label, m.at, m.end) for m in tl.markers] == [("zk down 1", 1.0, 2.0)]
    # the built-in brokers say kafka, not zk
    assert build_timeline(history, marks(BUILT_IN)).markers == []
    # the run keeps its marks: the report draws them from test.json alone
    assert stored_marks(meta[MARKS]) == marks(test.plan_info.roles)
    (tmp_path / "test.json").write_text(json.dumps({"roles": [role_to_json(SUT),
                                                              role_to_json(zk)]}))  # fmt: skip
    assert runner.marks_of(tmp_path) == zk_marks  # a run stored before marks were kept
    assert broker_role(3) == BUILT_IN["broker"]


def test_the_report_imports_nothing_of_the_systems_or_the_backends() -> None:
    code = (
        "import sys, sealcheck.report.report, sealcheck.report.serve; "
        "print(sorted(m for m in sys.modules if m.startswith(('sealcheck.systems', "
        "'sealcheck.infra', 'docker', 'testcontainers', 'psycopg'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
