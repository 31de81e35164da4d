"""One broker per pytest session (issue 52): the plugin offers its session's broker to each
local chaos run; a run whose faults leave brokers alone borrows it, on a topic of its own, and
leaves it running; a run that pauses brokers starts its own, and the session's broker never
sees it. Real Kafka, the tiny SQLite job (:mod:`tests.integration.tiny_sqlite_job`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from sealcheck.infra.kafka_admin import admin_client
from sealcheck.infra.topic import log_end
from tests.integration.tiny_jobs import NO_KEYLESS, RUN, Tiny

pytestmark = pytest.mark.integration


def _setup(run_dir: Path) -> dict[str, Any]:
    ops = (json.loads(line) for line in (run_dir / "history.jsonl").open())
    setup: dict[str, Any] = next(o["value"] for o in ops if o["f"] == "setup")
    return setup


def _topics(bootstrap: str) -> set[str]:
    return set(admin_client(bootstrap).list_topics(timeout=10).topics) - {"__consumer_offsets"}


def test_a_run_borrows_the_sessions_broker_and_one_that_pauses_brokers_does_not(
    sealcheck: Any, sealcheck_kafka: Any
) -> None:
    shared = sealcheck_kafka.bootstrap
    before = _topics(shared)

    borrowed = sealcheck(Tiny(), nemeses=["kill"], **RUN, **NO_KEYLESS)
    borrowed.assert_valid()
    setup = _setup(borrowed.run_dir)
    assert setup["kafka"] == "borrowed" and setup["bootstrap"] == shared
    topic = setup["topic"]
    assert topic.startswith("upserts-") and topic not in before
    # the run's records are on the session's broker, in its own topic, all of them dumped
    assert (
        sum(log_end(shared, topic).values())
        == pq.read_metadata(borrowed.run_dir / "topic.parquet").num_rows
    )
    assert not (borrowed.run_dir / "logs" / "kafka-1.log").exists()  # it started no broker

    own = sealcheck(Tiny(), nemeses=["pause-kafka"], **RUN, **NO_KEYLESS)
    own.assert_valid()
    setup = _setup(own.run_dir)
    assert setup["kafka"] == "own" and setup["bootstrap"] != shared
    assert "brokers of its own" in own.output and "pause-kafka acts on brokers" in own.output
    assert (own.run_dir / "logs" / "kafka-1.log").exists()
    # the session's broker still serves, and never saw the second run
    assert _topics(shared) == before | {topic}
