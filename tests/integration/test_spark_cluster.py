"""``--spark cluster`` on local processes: our pipeline's Spark Connect server drives a Spark
standalone cluster (a master, two workers), and the cluster nemeses act on it.

One run replays a hand-written schedule so every cluster fault happens once at a known time:
an executor JVM killed (the worker launches another), a worker killed and started again (it
registers again; its executor is lost and replaced), a worker frozen and thawed. What the
harness guarantees: each fault happened and was healed, the driver saw the executors go and
come, steps went on being sealed after each fault, and the run is VALID (every step sealed
exactly once, nothing lost, nothing invented). Nothing of the cluster is left running.
Nightly (3 min): CI runs the cluster under a seeded chaos run on containers
(``tests/containers/test_spark_cluster_containers.py``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sealcheck.harness.run.config import load_config
from tests.cli_runs import left_of_cluster, ops, outcomes, replay, sealed_after

pytestmark = [pytest.mark.integration, pytest.mark.nightly]

SCHEDULE = [
    {"at_s": 4.0, "nemesis": "kill-executor", "f": "kill-executor", "value": {"worker": 0}},
    {
        "at_s": 12.0,
        "nemesis": "kill-spark-worker",
        "f": "kill-spark-worker",
        "value": {"worker": 1},
    },
    {
        "at_s": 20.0,
        "nemesis": "kill-spark-worker",
        "f": "start-spark-worker",
        "value": {"worker": 1},
    },
    {
        "at_s": 28.0,
        "nemesis": "pause-spark-worker",
        "f": "pause-spark-worker",
        "value": {"worker": 0},
    },
    {
        "at_s": 38.0,
        "nemesis": "pause-spark-worker",
        "f": "resume-spark-worker",
        "value": {"worker": 0},
    },
]


def test_cluster_faults_happen_heal_and_every_step_is_sealed_once(tmp_path: Path) -> None:
    cfg = load_config(
        None,
        {
            "name": "cluster",
            "seed": 7,
            "spark": "cluster",
            "duration_s": 46.0,
            "nemesis_interval_s": 10.0,
            "nemeses": ["kill-executor", "kill-spark-worker", "pause-spark-worker"],
        },
    )
    code, out, run_dir = replay(tmp_path, cfg.to_json(), SCHEDULE)
    assert code == 0, out[-3000:]
    assert "verdict: VALID" in out
    history = ops(run_dir)
    done = outcomes(history)
    for action in SCHEDULE:
        assert done[action["f"]]["outcome"] == "happened", (action, done.get(action["f"]))
    assert done["start-spark-worker"]["ready_s"] > 0  # it registered at the master again
    # the driver lost executors (the killed JVM, the killed worker's) and was given new ones
    driver = (run_dir / "logs" / "spark-server.log").read_text(errors="replace")
    assert driver.count("Lost executor") >= 2, driver[-2000:]
    assert driver.count("Granted executor ID") >= 4  # two at the start, one per loss
    master = (run_dir / "logs" / "spark-master.log").read_text(errors="replace")
    assert master.count("Registering worker") >= 3  # two, then the killed one again
    # steps went on being sealed after every fault
    assert (
        sealed_after(history, ("kill-executor", "start-spark-worker", "resume-spark-worker")) == []
    )
    assert left_of_cluster(run_dir) == []
