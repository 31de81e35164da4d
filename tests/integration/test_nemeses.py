"""kill-kafka and pause-kafka on a real broker: the broker dies or freezes (writes cannot be
acknowledged), and healing starts or thaws it (writes are acknowledged again). The pipeline
nemeses (kill, failpoint, pause) are shown to act and heal in ``test_chaos.py``."""

from __future__ import annotations

import logging
import random
from pathlib import Path

import pytest
from confluent_kafka import Producer

from harness.history import HistoryWriter
from harness.kafka_local import KafkaCluster
from harness.local_target import LocalTarget
from harness.pipeline_proc import PipelineProcess
from harness.supervisor import Supervisor
from nemeses import PlanInfo
from nemeses.kill_kafka import KillKafka

pytestmark = pytest.mark.integration


def acked(bootstrap: str, timeout_ms: int) -> bool:
    outcome: list[object] = []
    p = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "message.timeout.ms": timeout_ms,
            "logger": logging.getLogger("test.kill-kafka"),
        }
    )
    p.produce("t", b"v", key=b"k", on_delivery=lambda err, msg: outcome.append(err))
    p.flush(timeout_ms / 1000 + 5)
    return len(outcome) == 1 and outcome[0] is None  # KafkaError == None raises


def test_kill_kafka_kills_a_broker_and_heal_starts_it(tmp_path: Path) -> None:
    cluster = KafkaCluster(tmp_path / "kafka", size=1)
    try:
        cluster.start()
        cluster.create_topic("t", 1)
        assert acked(cluster.bootstrap, 10_000)

        def never(n: int) -> PipelineProcess:
            raise AssertionError("no pipeline in this test")

        history = HistoryWriter(tmp_path / "history.jsonl")
        target = LocalTarget(Supervisor(never, history, tmp_path / "fp"), cluster)
        nemesis = KillKafka(PlanInfo(1, ()))
        kill, start = nemesis.plan(random.Random(1), 0.0, 10.0)
        assert (kill.f, start.f) == ("kill-broker", "start-broker")
        pid = cluster.nodes[0].proc.pid if cluster.nodes[0].proc else None
        assert nemesis.invoke(kill, target) == {"broker": 0, "killed": pid, "outcome": "happened"}
        assert target.brokers_down() == [0]
        assert not acked(cluster.bootstrap, 2_000)  # nobody to acknowledge
        assert nemesis.heal(target) == ["started broker 0"]
        assert target.brokers_down() == []
        assert acked(cluster.bootstrap, 20_000)
        assert nemesis.heal(target) == []  # nothing left to heal
    finally:
        cluster.stop()


def test_pause_kafka_freezes_a_broker_and_heal_thaws_it(tmp_path: Path) -> None:
    from harness.procs import proc_state
    from nemeses.pause_kafka import PauseKafka

    cluster = KafkaCluster(tmp_path / "kafka", size=1)
    try:
        cluster.start()
        cluster.create_topic("t", 1)

        def never(n: int) -> PipelineProcess:
            raise AssertionError("no pipeline in this test")

        history = HistoryWriter(tmp_path / "history.jsonl")
        target = LocalTarget(Supervisor(never, history, tmp_path / "fp"), cluster)
        nemesis = PauseKafka(PlanInfo(1, ()))
        pause, resume = nemesis.plan(random.Random(2), 0.0, 10.0)
        assert (pause.f, resume.f) == ("pause-broker", "resume-broker")
        node = cluster.nodes[0]
        assert node.proc is not None
        assert nemesis.invoke(pause, target)["paused"] == node.proc.pid
        assert proc_state(node.proc.pid) in "Tt"  # the kernel says: stopped
        assert not acked(cluster.bootstrap, 2_000)
        assert nemesis.heal(target) == ["resumed broker 0"]
        assert proc_state(node.proc.pid) not in "Tt"
        assert acked(cluster.bootstrap, 20_000)
        assert nemesis.heal(target) == []
    finally:
        cluster.stop()
