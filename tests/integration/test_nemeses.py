"""kill-kafka and pause-kafka on a real broker: the broker dies or freezes (writes cannot be
acknowledged), and healing starts or thaws it (writes are acknowledged again). The pipeline
nemeses (kill, failpoint, pause) are shown to act and heal in ``test_chaos.py``."""

from __future__ import annotations

import logging
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from infra.local import LocalBackend
from nemeses import NEMESES, PlanInfo

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


class _Target:
    """The nemeses' target over the local backend's brokers (no pipeline in these tests)."""

    def __init__(self, backend: LocalBackend) -> None:
        self.backend, self.failpoints, self.partitions = backend, None, None

    def nodes(self, role: str) -> Sequence[Any]:
        return self.backend.nodes(role)


def test_kill_kafka_kills_a_broker_and_heal_starts_it(tmp_path: Path) -> None:
    backend = LocalBackend(1, tmp_path)
    try:
        backend.start("t", 1)
        assert acked(backend.bootstrap, 10_000)
        target = _Target(backend)
        nemesis = NEMESES["kill-kafka"](PlanInfo(1, ()))
        kill, start = nemesis.plan(random.Random(1), 0.0, 10.0)
        assert (kill.f, start.f) == ("kill-broker", "start-broker")
        pid = backend.brokers[0].ident
        done = nemesis.invoke(kill, target)  # type: ignore[arg-type]
        assert done == {"broker": 0, "killed": pid, "outcome": "happened"}
        assert not backend.brokers[0].alive
        assert not acked(backend.bootstrap, 2_000)  # nobody to acknowledge
        assert nemesis.heal(target) == ["started kafka-1"]  # type: ignore[arg-type]
        assert backend.brokers[0].alive
        assert acked(backend.bootstrap, 20_000)
        assert nemesis.heal(target) == []  # type: ignore[arg-type]  # nothing left to heal
    finally:
        backend.stop(tmp_path)


def test_pause_kafka_freezes_a_broker_and_heal_thaws_it(tmp_path: Path) -> None:
    from infra.procs import proc_state

    backend = LocalBackend(1, tmp_path)
    try:
        backend.start("t", 1)
        target = _Target(backend)
        nemesis = NEMESES["pause-kafka"](PlanInfo(1, ()))
        pause, resume = nemesis.plan(random.Random(2), 0.0, 10.0)
        assert (pause.f, resume.f) == ("pause-broker", "resume-broker")
        pid = backend.brokers[0].ident
        assert isinstance(pid, int)
        assert nemesis.invoke(pause, target)["paused"] == pid  # type: ignore[arg-type]
        assert proc_state(pid) in "Tt"  # the kernel says: stopped
        assert not acked(backend.bootstrap, 2_000)
        assert nemesis.heal(target) == [f"resumed kafka-1 ({pid})"]  # type: ignore[arg-type]
        assert proc_state(pid) not in "Tt"
        assert acked(backend.bootstrap, 20_000)
        assert nemesis.heal(target) == []  # type: ignore[arg-type]
    finally:
        backend.stop(tmp_path)
