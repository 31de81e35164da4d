"""``--system delta-streaming --spark cluster`` on local processes: the Structured Streaming +
Delta job's driver (inside each incarnation) submits to a Spark standalone cluster whose
executors write the tables' files into the job's directory.

One run replays a hand-written schedule: an executor JVM killed mid-batch (the worker launches
another), a worker killed and started again (its executor lost, the task retried on the
other), then the job itself killed (a new driver, a new application on the same cluster). What
the harness guarantees: each fault happened and was healed, batches went on being committed
after each, and the run is VALID (every batch sealed exactly once, nothing lost, nothing
invented). Nothing of the cluster is left running. Nightly: the job's recovery costs ~40 s.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sealcheck.harness.run.config import load_config
from tests.cli_runs import left_of_cluster, ops, outcomes, replay, sealed_after

pytestmark = [pytest.mark.integration, pytest.mark.nightly]

SCHEDULE = [
    {"at_s": 8.0, "nemesis": "kill-executor", "f": "kill-executor", "value": {"worker": 0}},
    {
        "at_s": 25.0,
        "nemesis": "kill-spark-worker",
        "f": "kill-spark-worker",
        "value": {"worker": 1},
    },
    {
        "at_s": 35.0,
        "nemesis": "kill-spark-worker",
        "f": "start-spark-worker",
        "value": {"worker": 1},
    },
    {"at_s": 60.0, "nemesis": "kill", "f": "kill-pipeline", "value": {}},
]


def test_the_delta_job_on_a_cluster_survives_executor_worker_and_driver_kills(
    tmp_path: Path,
) -> None:
    cfg = load_config(
        None,
        {
            "name": "delta-cluster",
            "seed": 5,
            "system": "delta-streaming",
            "spark": "cluster",
            "duration_s": 110.0,
            "nemesis_interval_s": 25.0,
            "nemeses": ["kill-executor", "kill-spark-worker", "kill"],
        },
    )
    code, out, run_dir = replay(tmp_path, cfg.to_json(), SCHEDULE, timeout_s=1200)
    assert code == 0, out[-3000:]
    assert "verdict: VALID" in out
    history = ops(run_dir)
    done = outcomes(history)
    for action in SCHEDULE:
        assert done[action["f"]]["outcome"] == "happened", (action, done.get(action["f"]))
    assert done["start-spark-worker"]["ready_s"] > 0  # it registered at the master again
    # the first driver lost executors (the killed JVM, the killed worker's)
    driver = (run_dir / "logs" / "sut-0.log").read_text(errors="replace")
    assert driver.count("Lost executor") >= 2, driver[-2000:]
    master = (run_dir / "logs" / "spark-master.log").read_text(errors="replace")
    assert master.count("Registering worker") >= 3  # two, then the killed one again
    assert master.count("Registering app") >= 2  # a new driver after the job's kill
    # batches went on being committed after every fault
    assert sealed_after(history, ("kill-executor", "start-spark-worker", "kill-sut")) == []
    assert left_of_cluster(run_dir) == []
