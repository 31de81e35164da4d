"""Container nemeses on a real topology. Partitions: each cut is checked with TCP connections from
inside the cut container's network namespace — refused while cut, working again once healed —
and healing leaves none of the run's iptables rules behind. Links not cut keep working. And
``kill-postgres`` / ``pause-kafka``: the nemesis acts on the node of its role, the effect is
seen on the container, and healing undoes it."""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import docker
import psycopg
import pytest

from sealcheck.infra.containers.backend import ContainerPartitions, ContainersBackend
from sealcheck.infra.containers.cuts import can_connect, rules_in
from sealcheck.infra.containers.topology import container_ip
from sealcheck.nemeses import NEMESES, PlanInfo
from sealcheck.systems import run_roles, system
from sealcheck.systems.upsert_source.image import upsert_source_image

#: the roles of a run of the upsert source on this backend (its store in PostgreSQL)
ROLES = run_roles(system("upsert-source"), "containers", 3, "connect")

pytestmark = pytest.mark.containers


class _Sleeper:
    """Stands in for the running incarnation: a sleeping pipeline-image container."""

    def __init__(self, box: Any) -> None:
        box.reload()
        self.pid = int(box.attrs["State"]["Pid"])
        self.alive = True


class _Target:
    """The nemeses' target over the containers backend (no pipeline, no failpoints)."""

    def __init__(self, backend: ContainersBackend, cuts: ContainerPartitions) -> None:
        self.backend, self.partitions = backend, cuts
        self.failpoints = None

    def nodes(self, role: str) -> Sequence[Any]:
        return self.backend.nodes(role)


@pytest.fixture(scope="module")
def setup(
    docker_engine: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[ContainersBackend, _Target, int]]:
    backend = ContainersBackend(3, tmp_path_factory.mktemp("work"), "pytest-partitions")
    logs = tmp_path_factory.mktemp("logs")
    try:
        backend.start("t", 1)
        t = backend.topo
        box = t.client.containers.run(
            upsert_source_image(),
            entrypoint=["sleep", "600"],
            detach=True,
            network=t.network_name,
            labels=t.labels,
        )
        sleeper = _Sleeper(box)
        cuts = ContainerPartitions(t, lambda: sleeper)  # type: ignore[arg-type, return-value]
        yield backend, _Target(backend, cuts), sleeper.pid
    finally:
        backend.stop(Path(logs))


def test_each_partition_cuts_exactly_its_link(
    setup: tuple[ContainersBackend, _Target, int],
) -> None:
    backend, target, pipe = setup
    t, cuts = backend.topo, target.partitions
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
        ("sut-kafka", "pipeline->kafka"),
        ("sut-database", "pipeline->postgres"),
        ("broker", "broker0->broker1"),
    ):
        done = cuts.cut(kind, 0)
        assert done["rules"] == 2 * len(done["peers"])
        expected = dict.fromkeys(links(), True) | {gone: False}
        assert links() == expected, kind
        healed = cuts.restore(kind, 0)
        assert healed["deleted"] == done["rules"]
        assert links() == dict.fromkeys(expected, True), kind
        assert rules_in(done["pid"], cuts.tag) == []
    cuts.cut("sut-kafka", 0)
    assert cuts.heal() == ["sut-kafka: deleted 6 rules"]
    assert rules_in(pipe, cuts.tag) == []


def test_the_run_network_and_labels(setup: tuple[ContainersBackend, _Target, int]) -> None:
    t = setup[0].topo
    client = docker.from_env()
    try:
        boxes = client.containers.list(filters={"label": f"dev.sealcheck.run={t.run_id}"})
        assert len(boxes) == 5  # three brokers, PostgreSQL, the stand-in pipeline
        assert {n.name for n in client.networks.list(names=[t.network_name])} == {t.network_name}
    finally:
        client.close()


def test_kill_postgres_kills_the_database_and_heal_restarts_it(
    setup: tuple[ContainersBackend, _Target, int],
) -> None:
    backend, target, _ = setup
    db = backend.database()
    name = db.new_database("survives")
    nemesis = NEMESES["kill-postgres"](PlanInfo(roles=ROLES))
    kill, start = nemesis.plan(random.Random(1), 0.0, 10.0)
    assert (kill.f, start.f) == ("kill-postgres", "start-postgres")
    assert nemesis.invoke(kill, target)["killed"]  # type: ignore[arg-type]
    box = backend.topo.postgres.container.get_wrapped_container()
    box.reload()
    assert box.status == "exited"
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(db.dsn(name), connect_timeout=2).close()
    assert nemesis.heal(target) == ["started postgres"]  # type: ignore[arg-type]
    with psycopg.connect(db.dsn(name), connect_timeout=5) as con:  # the database survived
        assert con.execute("SELECT 1").fetchone() == (1,)
    assert nemesis.heal(target) == []  # type: ignore[arg-type]


def test_pause_kafka_freezes_a_broker_container_and_heal_thaws_it(
    setup: tuple[ContainersBackend, _Target, int],
) -> None:
    backend, target, _ = setup
    nemesis = NEMESES["pause-kafka"](PlanInfo(roles=ROLES))
    pause, _ = nemesis.plan(random.Random(3), 0.0, 10.0)
    broker = int(pause.value["broker"])
    assert nemesis.invoke(pause, target)["outcome"] == "happened"  # type: ignore[arg-type]
    box = backend.topo.brokers[broker].wrapped
    box.reload()
    assert box.status == "paused"
    healed = nemesis.heal(target)  # type: ignore[arg-type]
    assert healed == [f"resumed kafka-{broker + 1} ({box.name})"]
    box.reload()
    assert box.status == "running"
    backend.topo.wait_brokers(3, 60)


_CLIENT = """
import psycopg, sys
con = psycopg.connect(sys.argv[1], autocommit=True, connect_timeout=5, tcp_user_timeout=3000)
con.execute("CREATE TABLE t (v int)")  # autocommit: no COMMIT goes out, the cut stays unarmed
print(con.execute("SELECT count(*) FROM t").fetchone()[0], flush=True)
try:
    with con.transaction():
        con.execute("INSERT INTO t VALUES (1)")
    print("write committed")
except psycopg.OperationalError as exc:
    print("write reply lost:", type(exc).__name__)
"""


def test_lose_commit_reply_cuts_the_reply_of_a_commit_that_happened(
    setup: tuple[ContainersBackend, _Target, int],
) -> None:
    """A client in the stand-in incarnation's namespace creates a table and reads it (replies
    come), then commits a write: PostgreSQL commits it but its reply never arrives (the client
    times out); resolving says it happened; after the blackout (10 s from the commit) the link
    works again, and healing removes every rule."""
    import subprocess
    import sys

    backend, target, pipe = setup
    db = backend.database()
    name = db.new_database("reply")
    nemesis = NEMESES["lose-commit-reply"](PlanInfo(roles=ROLES))
    [cut] = nemesis.plan(random.Random(1), 0.0, 10.0)
    done = nemesis.invoke(cut, target)  # type: ignore[arg-type]
    assert (done["outcome"], done["rules"]) == ("pending", 2)
    assert not target.partitions.fired("commit-reply")
    client = subprocess.run(
        ["nsenter", "-t", str(pipe), "-n", sys.executable, "-c", _CLIENT, db.dsn(name)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert client.stdout.splitlines() == [
        "0",
        "write reply lost: OperationalError",
    ], client.stderr
    with psycopg.connect(db.dsn(name), connect_timeout=5) as con:  # from the host: it happened
        assert con.execute("SELECT count(*) FROM t").fetchone() == (1,)
    assert target.partitions.fired("commit-reply")
    assert nemesis.resolve(cut, target, 5.0) == {"outcome": "happened"}  # type: ignore[arg-type]
    assert rules_in(pipe, target.partitions.tag)  # it stays with the incarnation it caught
    pg = container_ip(backend.topo.postgres.container.get_wrapped_container())
    assert can_connect(pipe, pg, 5432, timeout_s=10.0)  # ... but lets replies through again
    # the spent cut is replaced by a fresh one that waits for a commit of its own
    again = nemesis.invoke(cut, target)  # type: ignore[arg-type]
    assert again["outcome"] == "pending" and not target.partitions.fired("commit-reply")
    assert nemesis.heal(target) == ["removed the commit-reply cut (2 rules)"]  # type: ignore[arg-type]
    assert rules_in(pipe, target.partitions.tag) == []
    assert can_connect(pipe, pg, 5432)
