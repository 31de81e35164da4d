"""The Spark cluster's parts on their own: planning of its nemeses, the settings that need it,
and finding an executor JVM among a worker's descendants."""

from __future__ import annotations

import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sealcheck.core.nodes import Launch
from sealcheck.harness.run.config import ConfigError
from sealcheck.harness.run.test import load_test
from sealcheck.nemeses.api import PlanInfo
from sealcheck.nemeses.registry import NEMESES, requirements
from sealcheck.systems.api import Settings
from sealcheck.systems.registry import system
from sealcheck.systems.roles import every_role
from sealcheck.systems.spark_cluster import EXECUTOR_CLASS, executor_pids
from sealcheck.systems.spark_cluster import roles as cluster_roles
from sealcheck_delta_streaming import cli as delta_cli
from sealcheck_delta_streaming import job as job_module
from sealcheck_delta_streaming.job import JobConfig, cluster_conf
from sealcheck_upsert_source.spark import connect_server_command

INFO = PlanInfo(roles=cluster_roles())


def test_worker_kills_are_outages_of_a_seeded_worker_and_executor_kills_instants() -> None:
    worker = NEMESES["kill-spark-worker"](INFO)
    plan = worker.plan(random.Random(3), 10.0, 20.0)
    assert [a.f for a in plan] == ["kill-spark-worker", "start-spark-worker"]
    assert plan[0].value == plan[1].value and plan[0].value["worker"] in (0, 1)
    assert worker.marks["kill-spark-worker"].kind == "start"
    executor = NEMESES["kill-executor"](INFO)
    (kill,) = executor.plan(random.Random(3), 10.0, 20.0)
    assert kill.f == "kill-executor" and 10.0 <= kill.at_s <= 20.0
    assert executor.marks["kill-executor"].kind == "instant"
    paused = NEMESES["pause-spark-worker"](INFO).plan(random.Random(3), 0.0, 20.0)
    assert [a.f for a in paused] == ["pause-spark-worker", "resume-spark-worker"]
    for name in ("kill-spark-worker", "kill-executor", "pause-spark-worker"):
        assert requirements(name, every_role()) == {"spark-cluster"}
    # the same seed plans the same faults
    assert worker.plan(random.Random(3), 10.0, 20.0) == plan


def test_cluster_nemeses_need_spark_cluster_and_both_systems_can_have_one() -> None:
    with pytest.raises(ConfigError, match=r"kill-spark-worker.*add --spark cluster"):
        load_test(None, {"nemeses": ["kill-spark-worker"]})
    with pytest.raises(ConfigError, match=r"kill-executor.*add --spark cluster"):
        load_test(None, {"system": "delta-streaming", "nemeses": ["kill-executor"]})
    cfg = load_test(None, {"spark": "cluster", "nemeses": ["kill-spark-worker", "kill"]}).spec
    assert cfg.nemeses == ("kill-spark-worker", "kill")
    delta = {"system": "delta-streaming", "spark": "cluster", "nemeses": ["kill-executor"]}
    assert load_test(None, delta).spec.nemeses == ("kill-executor",)


class _Backend:
    """Just enough of a backend to lay out a deployment without starting anything."""

    bootstrap = "127.0.0.1:9092"
    name, runs_images = "local", False

    def address(self, name: str) -> str:
        return "127.0.0.1"

    def service(self, launch: Launch, name: str, log_path: Path) -> Launch:
        return launch

    def database(self) -> None:
        return None


def test_the_delta_job_submits_to_the_cluster_whose_workers_see_its_directory(
    tmp_path: Path,
) -> None:
    settings = Settings("t", 100, spark="cluster")
    dep = system("delta-streaming").deploy(_Backend(), settings, tmp_path, tmp_path)  # type: ignore[arg-type]
    cluster = dep.cluster
    assert cluster is not None and cluster.shared == (dep.store,)
    assert cluster.image is None  # local processes: no image
    launch = dep.launch(0)
    assert launch.args[launch.args.index("--master") + 1] == cluster.url
    assert launch.env["SPARK_LOCAL_IP"] == "127.0.0.1"
    for worker in cluster.workers:
        assert worker.node.shared == (dep.store,)  # type: ignore[attr-defined]
    assert [n.name for n in dep.nodes("spark-worker")] == ["spark-worker-1", "spark-worker-2"]
    local = system("delta-streaming").deploy(  # type: ignore[arg-type]
        _Backend(), Settings("t", 100, spark="local"), tmp_path, tmp_path
    )
    assert local.cluster is None and "--master" not in local.launch(0).args
    assert local.nodes("spark-worker") == []


@pytest.mark.parametrize("name", ["upsert-source", "delta-streaming"])
def test_a_built_in_incarnation_starts_in_the_runs_work_directory(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its Spark driver makes ``artifacts/`` in its working directory: never the user's. The
    run's directory may be relative (``--runs runs``): the incarnation's directory and the
    paths it is given are absolute, so they name the same files from there."""
    import sealcheck.infra.jars

    monkeypatch.setattr(sealcheck.infra.jars, "spark_connector_jars", lambda: [])
    monkeypatch.setattr(sealcheck.infra.jars, "delta_jars", lambda: [])
    monkeypatch.chdir(tmp_path)
    work = Path("runs/t/work")
    settings = Settings("t", 100, spark="local")
    launch = system(name).deploy(_Backend(), settings, work, Path("logs")).launch(0)  # type: ignore[arg-type]
    assert launch.workdir is not None and Path(launch.workdir).is_absolute()
    assert Path(launch.workdir).is_relative_to(tmp_path / work)
    (store,) = [launch.args[i + 1] for i, a in enumerate(launch.args) if a in ("--store", "--dir")]
    assert Path(store).is_absolute() and Path(store).is_relative_to(tmp_path / work)


def test_a_local_workers_directory_is_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A local worker starts in its scratch directory: the directory it keeps its executors'
    files in is named absolute, or it would land under that scratch (``--runs`` relative)."""
    from sealcheck.systems.spark_cluster import SparkCluster

    monkeypatch.chdir(tmp_path)
    cluster = SparkCluster(_Backend(), Path("runs/t/logs"))  # type: ignore[arg-type]
    assert cluster.image is None  # local processes need no image
    for worker in cluster.workers:
        launch = cluster.worker_launch(worker)
        work = Path(launch.program[launch.program.index("--work-dir") + 1])
        assert work == tmp_path / "runs" / "t" / "work" / worker.name


def test_the_delta_drivers_executors_load_its_jars_and_call_back_on_its_address(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cfg = JobConfig(
        "b:9092", "t", Path("/d"), jars=("/j/a.jar", "/j/b.jar"), master="spark://m:7077"
    )
    monkeypatch.setenv("SPARK_LOCAL_IP", "127.0.0.1")
    conf = cluster_conf(cfg)
    assert conf["spark.executor.extraClassPath"] == "/j/a.jar:/j/b.jar"
    assert conf["spark.cores.max"] == "2" and conf["spark.driver.host"] == "127.0.0.1"
    monkeypatch.delenv("SPARK_LOCAL_IP")
    monkeypatch.setattr(job_module.socket, "gethostbyname", lambda name: "172.18.0.7")
    conf = cluster_conf(cfg)
    assert conf["spark.driver.host"] == "172.18.0.7"
    assert conf["spark.driver.bindAddress"] == "0.0.0.0"


def test_the_delta_job_refuses_a_master_that_is_not_a_standalone_one(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    args = ["--bootstrap", "b:1", "--topic", "t", "--dir", str(tmp_path), "--master", "yarn"]
    with pytest.raises(SystemExit) as exit_:
        delta_cli.main(args)
    assert exit_.value.code == delta_cli.EXIT_USAGE
    assert (
        "--master 'yarn': give a standalone master as spark://HOST:PORT" in capsys.readouterr().err
    )


def test_the_connect_server_drives_the_cluster_with_jars_on_the_executors() -> None:
    cmd = connect_server_command("/jars", 15002, cores=2, master="spark://m:7077")
    assert cmd[cmd.index("--master") + 1] == "spark://m:7077"
    assert "spark.executor.extraClassPath=/jars/*" in cmd and "spark.cores.max=2" in cmd
    local = connect_server_command("/jars", 15002)
    assert local[local.index("--master") + 1] == "local[2]"
    assert not any("executor" in c for c in local)


def test_an_executor_is_found_among_a_workers_descendants() -> None:
    script = "import time; time.sleep(60)"
    worker = subprocess.Popen(
        ["bash", "-c", f"exec -a java {sys.executable} -c '{script}' {EXECUTOR_CLASS} & wait"]
    )
    try:
        deadline = time.monotonic() + 30
        while not (found := executor_pids(worker.pid)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(found) == 1 and found[0] != worker.pid
        other = subprocess.Popen([sys.executable, "-c", script])  # not the worker's: not found
        try:
            assert other.pid not in executor_pids(worker.pid)
        finally:
            other.kill()
            other.wait()
    finally:
        subprocess.run(["pkill", "-KILL", "-P", str(worker.pid)], check=False)
        worker.kill()
        worker.wait()
