"""The pipeline as a real process on real Kafka and real Spark: clean runs, a SIGKILL at
every failpoint followed by a restart, and two writers on one store."""

from __future__ import annotations

import itertools
import random
import time
from pathlib import Path
from typing import Any

import pytest

from sealcheck.checkers import CHECKERS, check_run, load_run
from sealcheck.harness.cli import smoke
from sealcheck.harness.run.workload import UpsertMix, upsert_records
from sealcheck.infra.topic import dump_topic, log_end
from sealcheck.systems.upsert_source import UpsertSource
from sealcheck_upsert_source.cli import EXIT_FENCED, EXIT_OK
from sealcheck_upsert_source.failpoints import FAILPOINTS
from sealcheck_upsert_source.persist import open_store
from tests.oracle import check_every_step
from tests.pipelines import PipelineRun, progress, wait_caught_up
from tests.runs import finish_run_dir

pytestmark = pytest.mark.integration

_topics = itertools.count()
MIX = UpsertMix(keys=300, tombstone_ratio=0.15, bad_ratio=0.04)


def fresh_topic(kafka: Any, records: int, seed: int) -> str:
    topic = f"upserts-{next(_topics)}"
    kafka.create_topic(topic, partitions=2)
    smoke.produce(kafka.bootstrap, topic, upsert_records(random.Random(seed), records, MIX))
    return topic


def pipeline(kafka: Any, topic: str, tmp: Path, name: str, **kw: Any) -> PipelineRun:
    return PipelineRun(
        kafka.bootstrap, topic, f"sqlite://{tmp / 'store.db'}", tmp / f"{name}.log", **kw
    )


def verify(kafka: Any, topic: str, store: str) -> int:
    """The slow oracle and the fast checkers must both call the run valid."""
    records = dump_topic(kafka.bootstrap, topic)
    s = open_store(store)
    try:
        result = check_every_step(s, records)
        uppers = s.uppers()
    finally:
        s.close()
    assert result.problems == []
    assert result.valid
    run_dir = Path(store.removeprefix("sqlite://")).parent / "run"
    finish_run_dir(run_dir, records, store, uppers)  # every record acknowledged, uppers seen
    judged = check_run(run_dir)
    verdicts = {name: r.valid if r.applicable else r.word() for name, r in judged.checkers.items()}
    # No observer captured steps here (the harness's does): what compaction merged can be
    # judged only merged, so sealed_state says so instead of passing.
    merged = any(since > 0 for since in load_run(run_dir).steps.export_sinces.values())
    expected = {
        **dict.fromkeys(CHECKERS, True),
        "as_of": "not applicable",
        "versions": "not applicable",
    }
    if merged:
        expected["sealed_state"] = None
        assert "merged by compaction" in str(judged.checkers["sealed_state"].error)
    assert verdicts == expected, {
        name: (r.anomaly_counts, r.error) for name, r in judged.checkers.items()
    }
    assert judged.valid is (None if merged else True)
    return len(result.steps)


def test_clean_run_matches_the_model_at_every_sealed_step(kafka: Any, tmp_path: Path) -> None:
    topic = fresh_topic(kafka, 5_000, seed=1)
    proc = pipeline(kafka, topic, tmp_path, "clean", max_records_per_step=700)
    proc.start()
    try:
        wait_caught_up(proc.store, log_end(kafka.bootstrap, topic), 120, proc)
    finally:
        assert proc.terminate() == EXIT_OK
    assert verify(kafka, topic, proc.store) == 8  # ceil(5000 / 700)
    assert '"event": "sealed"' in proc.log_text()
    # a backlog: steps 2-7 are full, so each one's records were read while the one before
    # committed (through the Spark Connect server, from the read-ahead thread)
    assert '"read_ahead": true' in proc.log_text()


def _args_for(point: str, spark_remote: str) -> tuple[str, ...]:
    compact = ("--retain-steps", "2", "--compact-every", "2") if point.startswith("compact") else ()
    return (*compact, "--spark-remote", spark_remote)


#: one failpoint per phase in CI (bindings, data, after a commit, compaction, rehydration);
#: the rest nightly
IN_CI = {
    "bindings.mid_append",
    "data.mid_append",
    "data.after_commit",
    "compact.mid",
    "rehydrate.mid",
}


@pytest.mark.parametrize(
    "point",
    [p if p in IN_CI else pytest.param(p, marks=pytest.mark.nightly) for p in sorted(FAILPOINTS)],
)
def test_sigkill_at_failpoint_then_restart_loses_and_invents_nothing(
    kafka: Any, spark_remote: str, tmp_path: Path, point: str
) -> None:
    """Through one Spark Connect server, as the harness runs the pipeline: the killed client
    and its successor share the server, so a session the crash left behind is in play too."""
    topic = fresh_topic(kafka, 4_000, seed=sorted(FAILPOINTS).index(point) + 10)
    args = _args_for(point, spark_remote)
    if point == "rehydrate.mid":  # needs something to rehydrate: seal two steps first
        warm = pipeline(
            kafka,
            topic,
            tmp_path,
            "warm",
            max_records_per_step=500,
            extra_args=(*args, "--max-steps", "2"),
        )
        warm.start()
        assert warm.wait(120) == EXIT_OK
    crashing = pipeline(
        kafka,
        topic,
        tmp_path,
        "crash",
        max_records_per_step=500,
        extra_args=args,
        failpoints=f"{point}=crash@{1 if point == 'rehydrate.mid' else 3}",
    )
    crashing.start()
    assert crashing.wait(120) == -9, crashing.log_text()[-2000:]
    assert UpsertSource().fired_failpoint(crashing.log_text()) == point
    before = progress(crashing.store).uppers

    restarted = pipeline(
        kafka, topic, tmp_path, "restart", max_records_per_step=500, extra_args=args
    )
    restarted.start()
    try:
        restarted.wait_started()
        after = wait_caught_up(restarted.store, log_end(kafka.bootstrap, topic), 120, restarted)
    finally:
        assert restarted.terminate() == EXIT_OK
    assert after.uppers["data"] >= before.get("data", 0)  # seals never go back
    verify(kafka, topic, restarted.store)


@pytest.mark.nightly  # CI sees fencing through the harness: the zombie nemesis (test_chaos.py)
def test_second_writer_fences_the_first_and_nothing_is_duplicated(
    kafka: Any, tmp_path: Path
) -> None:
    topic = fresh_topic(kafka, 8_000, seed=99)  # 40 steps: the first is still busy
    first = pipeline(kafka, topic, tmp_path, "first", max_records_per_step=200)
    second = pipeline(kafka, topic, tmp_path, "second", max_records_per_step=200)
    first.start()
    try:
        wait_caught_up(first.store, {0: 1}, 60, first)  # first has sealed a step
        second.start()
        fenced = None
        for _ in range(240):
            for proc in (first, second):
                if not proc.running:
                    fenced = proc
            if fenced is not None:
                break
            time.sleep(0.5)
        assert fenced is not None, "neither writer was fenced"
        assert fenced.returncode == EXIT_FENCED
        assert '"event": "fenced"' in fenced.log_text()
        survivor = second if fenced is first else first
        wait_caught_up(survivor.store, log_end(kafka.bootstrap, topic), 180, survivor)
    finally:
        for proc in (first, second):
            if proc.running:
                proc.terminate()
    verify(kafka, topic, first.store)
