"""The Spark cluster's parts on their own: planning of its nemeses, the settings that need it,
and finding an executor JVM among a worker's descendants."""

from __future__ import annotations

import random
import subprocess
import sys
import time

import pytest

from harness.config import ConfigError, load_config
from nemeses.api import PlanInfo
from nemeses.registry import NEMESES, requirements
from pipeline.spark import connect_server_command
from suts.spark_cluster import EXECUTOR_CLASS, executor_pids

INFO = PlanInfo(1, ())


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
        assert requirements(name) == {"spark-cluster"}
    # the same seed plans the same faults
    assert worker.plan(random.Random(3), 10.0, 20.0) == plan


def test_cluster_nemeses_need_spark_cluster_and_the_delta_job_cannot_have_one() -> None:
    with pytest.raises(ConfigError, match=r"kill-spark-worker.*add --spark cluster"):
        load_config(None, {"nemeses": ["kill-spark-worker"]})
    with pytest.raises(ConfigError, match="'delta-streaming' cannot submit to a Spark cluster"):
        load_config(None, {"system": "delta-streaming", "spark": "cluster"})
    cfg = load_config(None, {"spark": "cluster", "nemeses": ["kill-spark-worker", "kill"]})
    assert cfg.nemeses == ("kill-spark-worker", "kill")


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
