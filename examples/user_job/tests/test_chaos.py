"""Chaos tests of user_job: crashed and paused while it runs, it loses nothing and invents
nothing; with its MERGE's delete clause lost, Sealcheck names the batch and the key; with its
MERGE as Delta's documentation shows it, the key its first batch wrote twice. Writing
into SQLite instead (no bindings, no failpoints: judged from snapshots alone) it is VALID
killed inside its batches (told from its checkpoint's files), and a batch's first record
winning over its last is caught. Writing into PostgreSQL (a database in a container), it is
VALID killed inside its batches. Upgraded to its release 2 mid-run (a column more, the same
checkpoint), into Delta or SQLite, it is VALID, and release 2's MERGE mistakes are caught. Run
in containers (its driver in one, each broker in its own), it is VALID cut off from a broker
and killed, and its lost delete clause is caught."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest
from user_job_postgres_sealcheck import UserJobPostgres
from user_job_sealcheck import UserJob
from user_job_sqlite_sealcheck import UserJobSQLite

#: Short runs of a slow job (a restart costs a JVM, Spark and Delta: ~30 s on 2 cores).
RUN = {"keys": 200, "rate": 100}


def test_the_job_loses_nothing_when_killed_and_paused(sealcheck) -> None:
    result = sealcheck(UserJob(), nemeses=["kill", "pause"], duration=18, interval=6, **RUN)
    result.assert_valid()


def test_a_lost_delete_clause_is_caught_at_its_batch_and_key(sealcheck) -> None:
    bug = "keeps-deleted-rows"
    result = sealcheck(UserJob(), broken=bug, nemeses=["pause"], duration=12, interval=6, **RUN)
    result.assert_invalid("sealed_state")
    # the first wrong step first; sealed_state judges every step (as_of only some)
    first = next(a for a in result.anomalies if a.checker == "sealed_state")
    assert first.kind == "state-mismatch" and first.step == result.anomalies[0].step
    # The batch Sealcheck names read a tombstone of that key, which held a value before.
    start, end = batch_range(result.run_dir, first.step)
    topic = pq.read_table(result.run_dir / "topic.parquet").to_pylist()
    key = first.key.encode()
    tombstones = [r for r in topic if r["key"] == key and r["value"] is None]
    inside = [
        r for r in tombstones if start.get(r["partition"], 0) <= r["offset"] < end[r["partition"]]
    ]
    assert inside, f"no tombstone of {first.key} in batch {first.step}"


def test_the_merge_as_delta_documents_it_is_caught_at_its_first_batch(sealcheck) -> None:
    # Delta's upsertToDelta as its documentation shows it: a key twice in the first batch is
    # inserted twice; every later batch's MERGE then fails, so the job never catches up (a
    # short final phase: 60 s to try, not 300)
    bug = "merge-as-documented"
    result = sealcheck(UserJob(), broken=bug, duration=12, interval=6, final_timeout_s=60, **RUN)
    result.assert_invalid("unique_key")
    two = next(a for a in result.anomalies if a.checker == "unique_key" and a.step == 0)
    # the rows batch 0 wrote for that key, as Sealcheck read them from the table: two or more
    rows = pq.read_table(result.run_dir / "export" / "updates.parquet").to_pylist()
    key = two.key.encode()
    written = [r for r in rows if (r["collection"], r["key"], r["ts"]) == ("data", key, 0)]
    assert sum(r["diff"] for r in written) >= 2, written


def batch_range(run_dir: Path, batch: int) -> tuple[dict[int, int], dict[int, int]]:
    """The offsets batch ``batch`` read: the end offsets bound before it and by it (the run's
    export: ``bindings`` rows are ``partition -> next offset`` at the step that bound them)."""
    rows = pq.read_table(run_dir / "export" / "updates.parquet").to_pylist()
    bindings = sorted((r for r in rows if r["collection"] == "bindings" and r["diff"] > 0),
                      key=lambda r: r["ts"])  # fmt: skip

    def ends(upto: int) -> dict[int, int]:
        return {int(r["key"]): int(r["value"]) for r in bindings if r["ts"] <= upto}

    return ends(batch - 1), ends(batch)


def test_a_cluster_losing_executors_loses_nothing(sealcheck) -> None:
    # the job's driver submits to the run's Spark standalone cluster (two workers, an
    # executor of one core each, as local processes); an executor is SIGKILLed 25 s in, while
    # batches run, and its worker starts another
    result = sealcheck(UserJob(), spark="cluster", nemeses=["kill-executor"], duration=40,
                       interval=20, **RUN)  # fmt: skip
    result.assert_valid()


def test_on_a_cluster_a_merge_keeping_deleted_rows_is_caught(sealcheck) -> None:
    bug = "keeps-deleted-rows"
    result = sealcheck(UserJob(), broken=bug, spark="cluster", nemeses=["kill-executor"],
                       duration=40, interval=20, **RUN)  # fmt: skip
    result.assert_invalid("sealed_state")


def test_the_sqlite_job_loses_nothing_when_killed_inside_its_batches(sealcheck) -> None:
    # `window`: killed right after a batch's offsets/N appeared, before its commits/N — once,
    # 9 s into the faults, while the job runs (a second, 6 s later, would come while the job
    # still restarts from the first: a restart takes 20-45 s here)
    result = sealcheck(UserJobSQLite(), nemeses=["window"], duration=16, interval=8, **RUN)
    result.assert_valid()


def test_a_first_record_winning_is_caught_from_the_tables_alone(sealcheck) -> None:
    bug = "first-record-wins"
    result = sealcheck(
        UserJobSQLite(), broken=bug, nemeses=["pause"], duration=12, interval=6, **RUN
    )
    result.assert_invalid("prefix")
    # a key shows a value its own later record overwrote, beside keys written after that
    first = next(a for a in result.anomalies if a.checker == "prefix")
    assert first.kind == "no-prefix" and "overwritten at offset" in first.detail


@pytest.mark.parametrize("job", [UserJob(), UserJobSQLite()], ids=["delta", "sqlite"])
def test_release_2_resumes_release_1_when_upgraded_and_killed(sealcheck, job) -> None:
    # `upgrade`: release 1 stopped (SIGTERM or SIGKILL, from the seed), release 2 started on
    # its checkpoint and tables; a kill in the other window
    result = sealcheck(job, nemeses=["upgrade", "kill"], duration=45, interval=15, **RUN)
    result.assert_valid()


@pytest.mark.parametrize("mistake", ["v2-delete-needs-tier", "v2-normalised-keys"])
def test_a_release_2_mistake_is_caught(sealcheck, mistake: str) -> None:
    result = sealcheck(UserJob(), broken=mistake, nemeses=["upgrade"], duration=30,
                       interval=15, **RUN)  # fmt: skip
    result.assert_invalid("prefix")


def test_a_release_2_that_sets_its_new_column_on_insert_only_is_caught(sealcheck) -> None:
    # every other column is right: only the `versions` checker sees the NULL tier
    result = sealcheck(UserJob(), broken="v2-tier-on-insert-only", nemeses=["upgrade"],
                       duration=30, interval=15, **RUN)  # fmt: skip
    result.assert_invalid("versions")


@pytest.mark.containers
def test_the_postgres_job_loses_nothing_when_killed_inside_its_batches(
    sealcheck, sealcheck_postgres
) -> None:
    job = UserJobPostgres(dsn=sealcheck_postgres)
    result = sealcheck(job, nemeses=["window"], duration=16, interval=8, **RUN)
    result.assert_valid()  # prefix: valid only after judging two states or more


@pytest.mark.containers
def test_in_containers_cut_off_and_killed_the_job_loses_nothing(sealcheck) -> None:
    # `backend="containers"`: the job's driver in a container of an image Sealcheck builds
    # from this installed project (its command as it is; run.dir at the same path), each
    # broker in its own; the driver is cut off from a broker, then killed
    result = sealcheck(UserJob(), backend="containers", nemeses=["partition", "kill"],
                       duration=40, interval=20, **RUN)  # fmt: skip
    result.assert_valid()


@pytest.mark.containers
def test_in_containers_a_merge_keeping_deleted_rows_is_caught(sealcheck) -> None:
    bug = "keeps-deleted-rows"
    result = sealcheck(UserJob(), backend="containers", broken=bug, nemeses=["partition"],
                       duration=40, interval=20, **RUN)  # fmt: skip
    result.assert_invalid("sealed_state")
