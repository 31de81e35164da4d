"""``--spark cluster`` on the containers backend: a Spark standalone master and two workers,
each a container of the pipeline image on the run's network, driven by the run's Spark
Connect server; one executor JVM killed inside a worker, then the other worker's container
killed mid-run (its executor with it) and started again. The run is VALID: every step sealed
exactly once although tasks lost their executors; the driver saw them go and come; nothing is
left behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.config import load_config
from tests.cli_runs import labelled, ops, outcomes, replay

pytestmark = pytest.mark.containers

SCHEDULE = [  # a worker's restart in a container takes 15-40 s here: it comes last
    {"at_s": 5.0, "nemesis": "kill-executor", "f": "kill-executor", "value": {"worker": 1}},
    {
        "at_s": 12.0,
        "nemesis": "kill-spark-worker",
        "f": "kill-spark-worker",
        "value": {"worker": 0},
    },
    {
        "at_s": 22.0,
        "nemesis": "kill-spark-worker",
        "f": "start-spark-worker",
        "value": {"worker": 0},
    },
]


def test_a_worker_killed_under_the_pipeline_on_a_spark_cluster_is_valid(
    docker_engine: None, tmp_path: Path
) -> None:
    cfg = load_config(
        None,
        {
            "name": "c-cluster",
            "seed": 2,
            "backend": "containers",
            "spark": "cluster",
            "duration_s": 60.0,
            "nemesis_interval_s": 12.0,
            "nemeses": ["kill-spark-worker", "kill-executor"],
            "workload": {"rate": 200.0},
        },
    )
    code, out, run_dir = replay(tmp_path, cfg.to_json(), SCHEDULE, timeout_s=1500)
    assert code == 0, out[-3000:]
    history = ops(run_dir)
    done = outcomes(history)
    for action in SCHEDULE:
        assert done[action["f"]]["outcome"] == "happened", (action, done.get(action["f"]))
    driver = (run_dir / "logs" / "spark-server.log").read_text(errors="replace")
    assert driver.count("Lost executor") >= 2, driver[-2000:]
    master = (run_dir / "logs" / "spark-master.log").read_text(errors="replace")
    assert master.count("Registering worker") >= 3  # two, then the killed one again
    assert any(o["f"] == "caught-up" for o in history)
    assert labelled() == []
