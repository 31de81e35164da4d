"""The worked example is the acceptance test of "test your own job": ``examples/user_job`` (a
project of its own: a Structured Streaming job that MERGEs into Delta, importing nothing of
Sealcheck, its 40-line descriptor and its pytest suite) installed from wheels into a fresh
virtualenv — Sealcheck's wheel and the example's, every dependency from a local wheelhouse,
no index — and run as its user would:

* ``pytest -n 2`` over its chaos tests of the Delta job: VALID for the job killed and
  paused, INVALID for the one-line variant without the MERGE's delete clause, named at the
  batch and the key; nightly, over the same job writing into SQLite (no bindings: judged
  from the harness's snapshots by ``prefix``), VALID killed and INVALID when a batch's first
  record of a key wins (and the one writing into PostgreSQL in a container:
  ``tests/containers/test_user_job_postgres.py``);
* the reproduce line the INVALID run printed, in a new shell elsewhere: INVALID again;
* ``sealcheck run --replay`` of that run (nightly): INVALID again;
* ``sealcheck shrink`` of it (nightly: it rebuilds the user's system from the saved reference,
  reproduces the run and finds that the bug needs no fault);
* nightly, the job with its MERGE as Delta's documentation shows it: INVALID at its first
  batch, a key written twice, beside the MERGE error every later batch died of.

The virtualenv is the session's (:mod:`tests.integration.installed`, shared with the collision
test): both wheels and every dependency from a local wheelhouse, no index.
"""

from __future__ import annotations

import json
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.integration.installed import Installed, example_suite, run, user_env
from tests.product import ROOT, in_git_checkout

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not in_git_checkout(), reason="needs a git checkout"),
]

EXAMPLE = ROOT / "examples" / "user_job"


@pytest.fixture(scope="module")
def venv(installed: Installed) -> Path:
    """The session's virtualenv (:mod:`tests.integration.installed`), set up as a user sets it
    up (``sealcheck setup``); its ``bin`` folder."""
    run([str(installed.bin / "sealcheck"), "setup"], installed.bin, user_env(installed.bin))
    return installed.bin


def run_suite(venv: Path, where: Path, select: str, passed: int) -> tuple[Path, str]:
    """The example's own suite, run as its user runs it (two workers), its tests chosen by
    ``-k select``: the archive of its runs and pytest's output."""
    return example_suite(venv, EXAMPLE, where, select, passed)


@pytest.fixture(scope="module")
def suite(venv: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The example's Delta job's tests (killed and paused: VALID; without the MERGE's delete
    clause: INVALID), one per worker (the SQLite job's: nightly, below)."""
    delta = "killed_and_paused or lost_delete_clause"
    return run_suite(venv, tmp_path_factory.mktemp("project"), delta, 2)


def verdicts_told(runs: Path) -> dict[tuple[str, str | None], bool]:
    """Each run's (system, broken variant) and verdict, checking what pytest's JUnit XML says
    of each case first."""
    # under xdist each test case carries its run's properties (workers cannot record the
    # suite's: pytest issue 7767)
    cases = {
        c.get("name"): {p.get("name"): p.get("value") for p in c.iter("property")}
        for c in ET.parse(runs.parent / "chaos.xml").iter("testcase")
    }
    assert sorted(c["sealcheck_verdict"] for c in cases.values()) == ["INVALID", "VALID"], cases
    assert all(Path(c["sealcheck_report"]).is_file() for c in cases.values())
    assert all(c["sealcheck_reproduce"].startswith("sealcheck run ") for c in cases.values())
    verdicts = {}
    for results in runs.glob("*/*/results.json"):
        config = json.loads((results.parent / "test.json").read_text())["config"]
        verdicts[config["system"], config["broken"]] = json.loads(results.read_text())["valid"]
    return verdicts


def invalid_run(runs: Path) -> Path:
    """The suite's run of the variant without the delete clause (the first one)."""
    found = [
        p.parent
        for p in sorted(runs.glob("*/*/test.json"))
        if json.loads(p.read_text())["config"]["broken"] == "keeps-deleted-rows"
    ]
    return found[0]


def test_the_examples_suite_passes_under_two_workers(suite: tuple[Path, str]) -> None:
    assert verdicts_told(suite[0]) == {
        ("user_job_sealcheck:UserJob", None): True,
        ("user_job_sealcheck:UserJob", "keeps-deleted-rows"): False,
    }


@pytest.mark.nightly  # two more runs of the example; CI runs its Delta job's two
def test_the_examples_sqlite_job_is_judged_from_its_tables_alone(
    venv: Path, tmp_path: Path
) -> None:
    """The same job writing into SQLite (no bindings: judged from the harness's snapshots by
    ``prefix``): VALID killed inside its batches (told from its checkpoint's files alone),
    INVALID when a batch's first record of a key wins."""
    runs, _ = run_suite(venv, tmp_path, "sqlite_job or first_record_winning", 2)
    assert verdicts_told(runs) == {
        ("user_job_sqlite_sealcheck:UserJobSQLite", None): True,
        ("user_job_sqlite_sealcheck:UserJobSQLite", "first-record-wins"): False,
    }
    [sqlite_valid] = [
        r.parent
        for r in runs.glob("*/*/test.json")
        if json.loads(r.read_text())["config"]["nemeses"] == ["window"]
    ]
    ops = [json.loads(line) for line in (sqlite_valid / "history.jsonl").open()]
    inside = [
        op["value"]
        for op in ops
        if op.get("process") == "nemesis"
        and isinstance(op.get("value"), dict)
        and (op["value"].get("effect") or {}).get("effect")
    ]
    assert inside and all("checkpoint/offsets/" in v["effect"]["evidence"] for v in inside)


@pytest.mark.nightly  # five runs of the example's release 2 (Delta and SQLite)
def test_the_examples_release_2_is_judged_across_the_upgrade(venv: Path, tmp_path: Path) -> None:
    """Release 1 stopped and release 2 started on its state, from the installed wheel, into
    Delta and into SQLite: VALID; release 2's MERGE deleting only rows that have its new
    column, upper-casing keys, or setting its new column on insert only: INVALID."""
    runs, _ = run_suite(venv, tmp_path, "release_2", 5)
    verdicts: dict[tuple[str, str | None], bool] = {}
    for results in runs.glob("*/*/results.json"):
        config = json.loads((results.parent / "test.json").read_text())["config"]
        verdicts[config["system"], config["broken"]] = json.loads(results.read_text())["valid"]
        ops = [json.loads(line) for line in (results.parent / "history.jsonl").open()]
        ran = [o["value"]["version"] for o in ops if o["f"] == "version"]
        assert ran[0] == "v1" and ran[-1] == "v2", ran
    delta, sqlite = "user_job_sealcheck:UserJob", "user_job_sqlite_sealcheck:UserJobSQLite"
    assert verdicts == {
        (delta, None): True,
        (sqlite, None): True,
        (delta, "v2-delete-needs-tier"): False,
        (delta, "v2-normalised-keys"): False,
        (delta, "v2-tier-on-insert-only"): False,
    }


@pytest.mark.nightly  # two runs on a Spark standalone cluster (~2.5 min each here)
def test_the_examples_delta_job_on_a_cluster_survives_losing_executors(
    venv: Path, tmp_path: Path
) -> None:
    """The example's Delta job submitting to the run's Spark standalone cluster
    (``--spark cluster``, ``run.master``), an executor SIGKILLed while batches run: VALID, the
    fault's effect seen; with its MERGE's delete clause lost: INVALID."""
    runs, _ = run_suite(venv, tmp_path, "on_a_cluster or cluster_losing_executors", 2)
    assert verdicts_told(runs) == {
        ("user_job_sealcheck:UserJob", None): True,
        ("user_job_sealcheck:UserJob", "keeps-deleted-rows"): False,
    }
    for test in runs.glob("*/*/test.json"):
        assert json.loads(test.read_text())["config"]["spark"] == "cluster"
        ops = [json.loads(line) for line in (test.parent / "history.jsonl").open()]
        hit = [o for o in ops if o.get("f") == "kill-executor" and o.get("type") == "info"]
        assert hit and all((o["value"].get("effect") or {}).get("effect") for o in hit), hit


@pytest.mark.containers
@pytest.mark.nightly  # two runs in containers (~4 min each here), as root: Docker's engine
def test_the_examples_delta_job_in_containers_survives_partitions_and_kills(
    docker_engine: None, venv: Path, tmp_path: Path
) -> None:
    """The example's Delta job under ``--backend containers`` (issue 51): its driver in a
    container of the image Sealcheck built from the installed project, each broker in its
    own; cut off from a broker and killed: VALID, both faults' effects seen; with its MERGE's
    delete clause lost: INVALID."""
    runs, _ = example_suite(venv, EXAMPLE, tmp_path, "in_containers", 2, marks="containers")
    assert verdicts_told(runs) == {
        ("user_job_sealcheck:UserJob", None): True,
        ("user_job_sealcheck:UserJob", "keeps-deleted-rows"): False,
    }
    for test in runs.glob("*/*/test.json"):
        assert json.loads(test.read_text())["config"]["backend"] == "containers"
        ops = [json.loads(line) for line in (test.parent / "history.jsonl").open()]
        cuts = [o for o in ops if o.get("f") == "start-partition" and o.get("type") == "info"]
        assert cuts and all(o["value"].get("outcome") == "happened" for o in cuts), cuts


@pytest.mark.nightly  # one more run of the Delta job, ending on a liveness failure
def test_the_examples_merge_as_delta_documents_it_is_invalid_at_its_first_batch(
    venv: Path, tmp_path: Path
) -> None:
    """The example's job with its MERGE as Delta's documentation shows ``upsertToDelta``
    (``--broken merge-as-documented``), under the default nemeses: INVALID at batch 0, a key
    with two rows (the example's own test); every later batch's MERGE failed with Delta's own
    error (the job's log); and the dead letters it stored as ``CAST(value AS STRING)``, bytes
    that are not UTF-8 among them, were exported and judged."""
    runs, _ = run_suite(venv, tmp_path, "merge_as_delta_documents", 1)
    [run_dir] = [p.parent for p in runs.glob("*/*/results.json")]
    config = json.loads((run_dir / "test.json").read_text())["config"]
    assert config["broken"] == "merge-as-documented", config
    assert json.loads((run_dir / "results.json").read_text())["valid"] is False
    merge = "DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE"
    logs = "".join(p.read_text(errors="replace") for p in (run_dir / "logs").glob("sut-*.log"))
    assert merge in logs
    # the job's own error, as each exit by itself was recorded (and printed) when it happened,
    # and as the report shows it
    ops = [json.loads(line) for line in (run_dir / "history.jsonl").read_text().splitlines()]
    alone = [o["value"] for o in ops if o["f"] == "sut-exit" and o["value"].get("by_itself")]
    assert alone and any(merge in str(v.get("error")) for v in alone), alone
    assert merge in (run_dir / "report.html").read_text()
    updates = pq.read_table(run_dir / "export" / "updates.parquet").to_pylist()
    letters = [r["value"] for r in updates if r["collection"] == "errors"]
    assert any("\ufffd".encode() in v for v in letters), letters[:5]


def test_the_invalid_run_repeats_by_its_reproduce_line(
    venv: Path, suite: tuple[Path, str], tmp_path: Path
) -> None:
    """The reproduce line the INVALID run printed, in a new shell elsewhere, is INVALID again
    (``--replay`` of the same run: nightly, below)."""
    invalid = invalid_run(suite[0])
    line = json.loads((invalid / "test.json").read_text())["reproduce"][0]
    done = subprocess.run(
        ["bash", "-c", line], cwd=tmp_path, env=user_env(venv), capture_output=True,
        text=True, timeout=900, check=False,
    )  # fmt: skip
    output = done.stdout + done.stderr
    assert done.returncode == 1, (line, output[-3000:])
    assert "verdict: INVALID" in output, output[-3000:]


@pytest.mark.nightly  # one more run of the Delta job; CI repeats the run by its reproduce line
def test_the_invalid_run_repeats_by_its_replay(venv: Path, suite: tuple[Path, str]) -> None:
    """``sealcheck run --replay`` of the INVALID run (its saved schedule and the system's
    saved reference) is INVALID again."""
    invalid = invalid_run(suite[0])
    replay = [str(venv / "sealcheck"), "run", "--replay", str(invalid), "--no-progress"]
    done = subprocess.run(
        replay, env=user_env(venv), capture_output=True, text=True, timeout=900, check=False
    )
    output = done.stdout + done.stderr
    assert done.returncode == 1, output[-3000:]
    assert "verdict: INVALID" in output, output[-3000:]


@pytest.mark.nightly  # as many runs as it takes
def test_a_full_shrink_finds_the_bug_needs_no_fault(venv: Path, suite: tuple[Path, str]) -> None:
    invalid = invalid_run(suite[0])
    shrink = [str(venv / "sealcheck"), "shrink", str(invalid), "--max-runs", "12"]
    env = user_env(venv)
    done = subprocess.run(
        shrink, env=env, capture_output=True, text=True, timeout=3000, check=False
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    summary = json.loads((invalid / "shrink" / "summary.json").read_text())
    assert summary["minimal"] == [] and summary["reproduced"]["hits"] >= 1, summary
