"""kill-kafka, pause-kafka and lost-writes-kafka on a real broker: the broker dies, freezes or
loses its un-fsynced log (writes cannot be acknowledged, or acknowledged ones are gone), and
healing starts or thaws it (writes are acknowledged again). The pipeline
nemeses (kill, failpoint, pause) are shown to act and heal in ``test_chaos.py``."""

from __future__ import annotations

import logging
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from sealcheck.core.roles import SUT, by_name
from sealcheck.infra.local import LocalBackend
from sealcheck.infra.node import broker_role
from sealcheck.nemeses import NEMESES, PlanInfo

#: a local run's roles: the incarnation and one broker
ROLES = by_name(SUT, broker_role(1))

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

    def disks(self) -> Any:
        return self.backend.disks()


def test_kill_kafka_kills_a_broker_and_heal_starts_it(tmp_path: Path) -> None:
    backend = LocalBackend(1, tmp_path)
    try:
        backend.start("t", 1)
        assert acked(backend.bootstrap, 10_000)
        target = _Target(backend)
        nemesis = NEMESES["kill-kafka"](PlanInfo(roles=ROLES))
        kill, start = nemesis.plan(random.Random(1), 0.0, 10.0)
        assert (kill.f, start.f) == ("kill-broker", "start-broker")
        pid = backend.brokers[0].ident
        done = nemesis.invoke(kill, target)  # type: ignore[arg-type]
        effect = done.pop("effect")
        assert done == {"broker": 0, "killed": pid, "outcome": "happened"}
        assert effect["effect"] is True and "after the SIGKILL" in effect["evidence"]
        assert not backend.brokers[0].alive
        assert not acked(backend.bootstrap, 2_000)  # nobody to acknowledge
        assert nemesis.heal(target) == ["started kafka-1"]  # type: ignore[arg-type]
        assert backend.brokers[0].alive
        assert acked(backend.bootstrap, 20_000)
        assert nemesis.heal(target) == []  # type: ignore[arg-type]  # nothing left to heal
    finally:
        backend.stop(tmp_path)


def test_pause_kafka_freezes_a_broker_and_heal_thaws_it(tmp_path: Path) -> None:
    from sealcheck.infra.procs import proc_state

    backend = LocalBackend(1, tmp_path)
    try:
        backend.start("t", 1)
        target = _Target(backend)
        nemesis = NEMESES["pause-kafka"](PlanInfo(roles=ROLES))
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


def _acked_many(bootstrap: str, count: int) -> int:
    done: list[object] = []
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    for i in range(count):
        p.produce("t", b"v" * 100, key=str(i).encode(), on_delivery=lambda e, m: done.append(e))
        p.poll(0)
    p.flush(60)
    return sum(e is None for e in done)


def _high_watermark(bootstrap: str) -> int:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "test-hw"})
    try:
        return int(c.get_watermark_offsets(TopicPartition("t", 0), timeout=30)[1])
    finally:
        c.close()


def test_lost_writes_kafka_loses_acknowledged_records_and_heal_powers_on(
    tmp_path: Path,
) -> None:
    """One broker, acks=all, no fsync: a power cut loses records the broker acknowledged; the
    topic itself (fsynced when the backend made the disk durable) survives, and the broker
    serves again after the power-on."""
    backend = LocalBackend(1, tmp_path)
    try:
        backend.start("t", 1, lazy_brokers=True)
        assert set(backend.disks()) == {"kafka-1"}
        assert _acked_many(backend.bootstrap, 2_000) == 2_000
        assert _high_watermark(backend.bootstrap) == 2_000
        target = _Target(backend)
        nemesis = NEMESES["lost-writes-kafka"](PlanInfo(roles=ROLES))
        cut, power_on = nemesis.plan(random.Random(3), 0.0, 10.0)
        assert (cut.f, power_on.f) == ("power-cut-broker", "power-on-broker")
        pid = backend.brokers[0].ident
        done = nemesis.invoke(cut, target)  # type: ignore[arg-type]
        assert (done["outcome"], done["frozen"], done["killed"]) == ("happened", pid, pid)
        assert done["dropped_bytes"] >= 2_000 * 100  # the records were never fsynced
        assert any(p.endswith(".log") for p in done["dropped_paths"])
        assert not backend.brokers[0].alive
        on = nemesis.invoke(power_on, target)  # type: ignore[arg-type]
        assert on["outcome"] == "happened" and backend.brokers[0].alive
        assert acked(backend.bootstrap, 60_000)  # healed: the topic is there, writes go on
        assert _high_watermark(backend.bootstrap) < 2_000  # acknowledged, then lost
        assert nemesis.heal(target) == []  # type: ignore[arg-type]  # nothing left to heal
    finally:
        backend.stop(tmp_path)
    assert str(tmp_path) not in Path("/proc/mounts").read_text()  # unmounted
    assert (tmp_path / "lazyfs-kafka-1.log").exists()
