"""The worked example's job writing into PostgreSQL (``examples/user_job``, ``--sink
postgres``: no change-log table, no offsets table, no failpoint), judged from the harness's
snapshots by ``prefix``: the example's own containers test — its descriptor, the plugin's
``sealcheck_postgres`` fixture (a database in a container of the locally built image) and a
``window`` kill inside a batch — run as its user runs it, from the example's folder."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.product import ROOT

# nightly: ~2 minutes; CI keeps PostgreSQL in the containers chaos run (the pipeline's store)
# and in the persist contract, and the example's other sinks in the integration suite
pytestmark = [pytest.mark.containers, pytest.mark.nightly]

EXAMPLE = ROOT / "examples" / "user_job"


def test_the_example_job_writing_postgres_is_valid_killed_inside_its_batches(
    docker_engine: None, tmp_path: Path
) -> None:
    project = tmp_path / "user_job"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns("*.egg-info", "__pycache__"))
    runs = tmp_path / "runs"
    env = os.environ | {"PYTHONPATH": str(project)}  # the example, as if installed
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-m", "containers", "-k", "postgres", "-p",
         "no:cacheprovider",
         "--sealcheck-runs", str(runs)],
        cwd=project, env=env, capture_output=True, text=True, timeout=1200, check=False,
    )  # fmt: skip
    output = done.stdout + done.stderr
    assert done.returncode == 0 and "1 passed" in output, output[-4000:]
    [results] = runs.glob("*/*/results.json")
    doc = json.loads(results.read_text())
    config = json.loads((results.parent / "test.json").read_text())["config"]
    assert config["system"] == "user_job_postgres_sealcheck:UserJobPostgres"
    assert doc["valid"] is True
    prefix = doc["checkers"]["prefix"]
    assert prefix["valid"] is True and prefix["counts"]["data_states_judged"] >= 2, prefix
    assert doc["checkers"]["sealed_state"]["valid"] == "not applicable"  # no bindings
    ops = [json.loads(line) for line in (results.parent / "history.jsonl").open()]
    kills = [
        op["value"]["effect"]
        for op in ops
        if op.get("process") == "nemesis"
        and isinstance(op.get("value"), dict)
        and (op["value"].get("effect") or {}).get("effect")
    ]
    assert kills and all("checkpoint/offsets/" in k["evidence"] for k in kills), kills
