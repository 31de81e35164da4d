"""The delta-streaming job on the containers backend: each incarnation a container of the
``sealcheck-delta-streaming`` image whose job directory is the host's, bind-mounted at the same
path; a killed driver, a paused one, a broker killed under it and its failpoints; the correct job is
valid, and what the harness read it read from the host (delta-rs), not from Spark.

Nightly: one run is about 8 minutes here (a cold Spark with Delta beside three brokers)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sealcheck.rundir.history import History
from tests.cli_runs import labelled, sealcheck_run

pytestmark = [pytest.mark.containers, pytest.mark.nightly]


def test_the_delta_job_on_containers_is_valid_under_kills_and_a_broker_loss(
    docker_engine: None, tmp_path: Path
) -> None:
    # seed 3 plans a failpoint, a kill of the driver and a broker kill in its 4 windows
    flags = ("--name", "c-delta", "--system", "delta-streaming", "--seed", "3")
    faults = ("--nemesis", "failpoint,kill,pause,kill-kafka", "--duration", "120", "--interval")
    faults = (*faults, "30")
    code, out, run_dir = sealcheck_run(
        tmp_path, "--backend", "containers", "--rate", "200", *flags, *faults, timeout_s=1500
    )
    assert code == 0, out[-3000:]
    history = History.load(run_dir / "history.jsonl").ops
    done = [o for o in history if o["process"] == "nemesis" and o["type"] == "info"]
    assert any(o["f"] == "kill-sut" and o["value"].get("killed") for o in done), done
    assert any(o["f"] == "kill-broker" and o["value"].get("killed") for o in done), done
    assert any(o["f"] == "caught-up" for o in history)
    exits = [o["value"] for o in history if o["f"] == "sut-exit"]
    assert -9 in [e["code"] for e in exits], exits  # a driver died; a new container took over
    # a crash failpoint really crashes in a container (its process is not PID 1 there)
    assert all(e["code"] == -9 for e in exits if e.get("failpoint")), exits
    assert (run_dir / "export" / "versions.json").exists()  # the Delta log, read on the host
    results = json.loads((run_dir / "results.json").read_text())
    assert results["inputs"]["complete"] is True
    assert labelled() == []
