"""Container nemeses on a real topology. Partitions: each cut is checked with TCP connections from
inside the cut container's network namespace — refused while cut, working again once healed —
and healing leaves none of the run's iptables rules behind. Links not cut keep working. And
``kill-postgres``: the database is down, then back with its data."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import docker
import pytest

from harness.containers.backend import ContainerTarget
from harness.containers.cuts import can_connect, rules_in
from harness.containers.images import kafka_image, postgres_image
from harness.containers.pipeline_image import pipeline_image
from harness.containers.topology import Topology, container_ip

pytestmark = pytest.mark.containers


class _Sleeper:
    """Stands in for the supervisor: 'the pipeline' is a sleeping pipeline-image container."""

    def __init__(self, pid: int) -> None:
        self.pid = pid

    def current_pid(self) -> int:
        return self.pid


@pytest.fixture(scope="module")
def topo(docker_engine: None) -> Iterator[tuple[Topology, Any]]:
    images = {"kafka": kafka_image(), "postgres": postgres_image(), "pipeline": pipeline_image()}
    topo = Topology("pytest-partitions", 3, images)
    try:
        topo.start()
        sleeper = topo.client.containers.run(
            images["pipeline"],
            entrypoint=["sleep", "600"],
            detach=True,
            network=topo.network_name,
            labels=topo.labels,
        )
        sleeper.reload()
        yield topo, sleeper
    finally:
        topo.stop()


def test_each_partition_cuts_exactly_its_link(topo: tuple[Topology, Any]) -> None:
    t, sleeper = topo
    pipe = int(sleeper.attrs["State"]["Pid"])
    target = ContainerTarget(_Sleeper(pipe), t)  # type: ignore[arg-type]
    brokers = [b.ip() for b in t.brokers]
    pg = container_ip(t.postgres.container.get_wrapped_container())
    b0 = int(t.brokers[0].wrapped.attrs["State"]["Pid"])
    b1 = int(t.brokers[1].wrapped.attrs["State"]["Pid"])

    def links() -> dict[str, bool]:
        return {
            "pipeline->kafka": all(can_connect(pipe, ip, 9092) for ip in brokers),
            "pipeline->postgres": can_connect(pipe, pg, 5432),
            "broker0->broker1": can_connect(b0, brokers[1], 9093),
            "broker1->broker2": can_connect(b1, brokers[2], 9093),
        }

    assert links() == dict.fromkeys(links(), True)
    for kind, gone in (
        ("pipeline-kafka", "pipeline->kafka"),
        ("pipeline-postgres", "pipeline->postgres"),
        ("broker", "broker0->broker1"),
    ):
        done = target.partition_start(kind, 0)
        assert done["rules"] == 2 * len(done["peers"])
        expected = dict.fromkeys(links(), True) | {gone: False}
        assert links() == expected, kind
        healed = target.partition_end(kind, 0)
        assert healed["deleted"] == done["rules"]
        assert links() == dict.fromkeys(expected, True), kind
        assert rules_in(done["pid"], target.tag) == []
    target.partition_start("pipeline-kafka", 0)
    assert target.heal_partitions() == ["pipeline-kafka: deleted 6 rules"]
    assert rules_in(pipe, target.tag) == []


def test_the_run_network_and_labels(topo: tuple[Topology, Any]) -> None:
    t, _ = topo
    client = docker.from_env()
    try:
        boxes = client.containers.list(filters={"label": f"dev.sealcheck.run={t.run_id}"})
        assert len(boxes) == 5  # three brokers, PostgreSQL, the stand-in pipeline
        assert {n.name for n in client.networks.list(names=[t.network_name])} == {t.network_name}
    finally:
        client.close()


def test_kill_postgres_kills_the_database_and_heal_restarts_it(
    topo: tuple[Topology, Any],
) -> None:
    import random

    import psycopg

    from nemeses.kill_postgres import KillPostgres

    t, sleeper = topo
    target = ContainerTarget(_Sleeper(int(sleeper.attrs["State"]["Pid"])), t)  # type: ignore[arg-type]
    nemesis = KillPostgres()
    kill, start = nemesis.plan(random.Random(1), 0.0, 10.0)
    assert (kill.f, start.f) == ("kill-postgres", "start-postgres")
    assert nemesis.invoke(kill, target)["killed"]
    box = t.postgres.container.get_wrapped_container()
    box.reload()
    assert box.status == "exited"
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(t.store_dsn, connect_timeout=2).close()
    assert nemesis.heal(target) == ["started PostgreSQL"]
    with psycopg.connect(t.store_dsn, connect_timeout=5) as con:  # the data survived
        assert con.execute("SELECT 1").fetchone() == (1,)
    assert nemesis.heal(target) == []


def test_pause_kafka_freezes_a_broker_container_and_heal_thaws_it(
    topo: tuple[Topology, Any],
) -> None:
    import random

    from nemeses import PlanInfo
    from nemeses.pause_kafka import PauseKafka

    t, sleeper = topo
    target = ContainerTarget(_Sleeper(int(sleeper.attrs["State"]["Pid"])), t)  # type: ignore[arg-type]
    nemesis = PauseKafka(PlanInfo(3, ()))
    pause, _ = nemesis.plan(random.Random(3), 0.0, 10.0)
    broker = int(pause.value["broker"])
    nemesis.invoke(pause, target)
    box = t.brokers[broker].wrapped
    box.reload()
    assert box.status == "paused"
    assert nemesis.heal(target) == [f"resumed broker {broker}"]
    box.reload()
    assert box.status == "running"
    t.wait_brokers(3, 60)
