"""``--spark cluster`` on the containers backend: a Spark standalone master and two workers,
each a container of the pipeline image on the run's network, driven by the run's Spark
Connect server, under a chaos run that plans its faults from its seed: worker containers
killed mid-run (their executors with them) and started again, executor JVMs killed inside a
worker. The run is VALID: every step sealed exactly once although tasks lost their executors;
the driver saw them go and come; nothing is left behind."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sealcheck.harness.run.config import load_config
from sealcheck.harness.run.flags import to_flags
from tests.cli_runs import labelled, ops, sealcheck_run

# nightly: a cluster chaos run is 5 minutes here; CI covers the cluster's parts in
# tests/unit/test_spark_cluster_parts.py
pytestmark = [pytest.mark.containers, pytest.mark.nightly]


def test_a_seeded_chaos_run_killing_workers_of_a_spark_cluster_is_valid(
    docker_engine: None, tmp_path: Path
) -> None:
    # four windows of 12 s after a 12 s warm-up, dealt round-robin: each nemesis gets two
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
            "runs_dir": str(tmp_path / "store"),
        },
    )
    code, out, run_dir = sealcheck_run(tmp_path / "store", *to_flags(cfg), timeout_s=1500)
    assert code == 0, out[-3000:]
    assert "verdict: VALID" in out
    planned = json.loads((run_dir / "test.json").read_text())["schedule"]
    kinds = [a["f"] for a in planned]
    assert kinds.count("kill-spark-worker") == 2 and kinds.count("start-spark-worker") == 2
    assert kinds.count("kill-executor") == 2
    # seed 2 plans: an executor, worker 0 (killed, started), worker 1 (same), an executor
    assert [(a["f"], a["value"]["worker"]) for a in planned] == [
        ("kill-executor", 1),
        ("kill-spark-worker", 0),
        ("start-spark-worker", 0),
        ("kill-spark-worker", 1),
        ("start-spark-worker", 1),
        ("kill-executor", 1),
    ]
    history = ops(run_dir)
    done = {
        o["value"]["action"]: o["value"]
        for o in history
        if o["process"] == "nemesis" and o["type"] in ("info", "fail") and "outcome" in o["value"]
    }
    assert sorted(done) == list(range(len(planned)))  # every planned action has an outcome
    # the first worker kill and its start come before any slow action: they happen; later
    # ones may be late (a worker container takes 15-40 s to register again) and say why not
    assert done[1]["outcome"] == "happened" and done[1]["killed"]
    assert done[2]["outcome"] == "happened" and done[2]["ready_s"] > 0
    for value in done.values():
        assert value["outcome"] == "happened" or value.get("why"), value
    driver = (run_dir / "logs" / "spark-server.log").read_text(errors="replace")
    assert driver.count("Lost executor") >= 1, driver[-2000:]
    master = (run_dir / "logs" / "spark-master.log").read_text(errors="replace")
    assert master.count("Registering worker") >= 3  # two, then a killed one again
    assert any(o["f"] == "caught-up" for o in history)
    assert labelled() == []
