"""The lifecycle shared by the service containers (start, wait until it serves, stop, a context
manager) and the wait for a node's log line, with fakes: no Docker, no processes."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from sealcheck.infra import logwait
from sealcheck.infra.containers import service
from sealcheck.infra.containers.kafka import KafkaContainer
from sealcheck.infra.containers.postgres import PostgresContainer
from sealcheck.infra.containers.service import (
    OWNER_LABEL,
    RUN_DIR_LABEL,
    RUN_LABEL,
    ContainerService,
)
from sealcheck.infra.procs import RUN_ENV, owner_token


class _Wrapped:
    """A docker SDK container: running, logging ``lines`` one more per reload."""

    def __init__(self, lines: list[str], status: str = "running") -> None:
        self.lines, self.shown, self.status = lines, 0, status
        self.attrs = {"NetworkSettings": {"Networks": {"n": {"IPAddress": "10.0.0.7"}}}}

    def reload(self) -> None:
        self.shown = min(self.shown + 1, len(self.lines))

    def logs(self, tail: int | None = None) -> bytes:
        shown = self.lines[: self.shown]
        return "\n".join(shown[-tail:] if tail else shown).encode()


class _Docker:
    """testcontainers' DockerContainer: records what it was given and what was done."""

    made: ClassVar[list[_Docker]] = []
    lines: ClassVar[list[str]] = ["booting", "ready to serve"]
    status: ClassVar[str] = "running"

    def __init__(self, image: str, **kw: Any) -> None:
        self.image, self.kw, self.env = image, kw, {}
        self.box: _Wrapped | None = None
        self.stopped: dict[str, Any] | None = None
        _Docker.made.append(self)

    def with_env(self, key: str, value: str) -> _Docker:
        self.env[key] = value
        return self

    def start(self) -> None:
        self.box = _Wrapped(list(self.lines), self.status)

    def get_wrapped_container(self) -> _Wrapped | None:
        return self.box

    def stop(self, **kw: Any) -> None:
        self.stopped = kw


@pytest.fixture
def docker(monkeypatch: pytest.MonkeyPatch) -> type[_Docker]:
    _Docker.made = []
    monkeypatch.setattr(service, "DockerContainer", _Docker)
    monkeypatch.setattr(ContainerService, "poll_s", 0.0)
    return _Docker


class _Lines(ContainerService):
    what = "Echo"
    ready_line = "ready to serve"


def test_a_service_starts_waits_for_its_line_and_is_removed_on_exit(
    docker: type[_Docker], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(RUN_ENV, "/srv/runs/t/20261129T101500")  # as a run's harness has it
    with _Lines("echo:1", "run-1", network="net", aliases=("echo",)) as svc:
        box = docker.made[0]
        # the run, the process that owns it (cleanup removes it once that is gone) and the
        # run directory (a run's start removes only its own archive's)
        assert box.kw["labels"] == {
            RUN_LABEL: "run-1",
            OWNER_LABEL: owner_token(),
            RUN_DIR_LABEL: "/srv/runs/t/20261129T101500",
        }
        assert box.kw["network_aliases"] == ["echo"]
        assert svc.wrapped is box.box and "ready to serve" in box.box.logs().decode()
        assert svc.ip() == "10.0.0.7"
        assert box.stopped is None
    assert box.stopped == {"force": True, "delete_volume": True}


def test_stop_before_start_does_nothing(docker: type[_Docker]) -> None:
    svc = _Lines("echo:1", "run-1")
    svc.stop()
    assert docker.made[0].stopped is None


def test_a_container_that_exits_while_starting_says_so_with_its_log(
    docker: type[_Docker], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_Docker, "status", "exited")
    with pytest.raises(RuntimeError, match=r"Echo container exited \(exited\):\nbooting"):
        _Lines("echo:1", "run-1").start()


def test_a_service_that_never_serves_times_out_naming_the_last_error(
    docker: type[_Docker],
) -> None:
    class Refusing(ContainerService):
        what = "Never"

        def ready(self) -> bool:
            raise ConnectionRefusedError("port 1 closed")

    with pytest.raises(TimeoutError, match=r"Never at \? not ready: port 1 closed"):
        Refusing("never:1", "run-1").start(timeout_s=0.05)


def test_a_service_says_when_it_serves(docker: type[_Docker]) -> None:
    with pytest.raises(NotImplementedError):
        ContainerService("x:1", "run-1").start(timeout_s=0.05)


def test_kafka_and_postgres_share_the_lifecycle(
    docker: type[_Docker], monkeypatch: pytest.MonkeyPatch
) -> None:
    for kind in (KafkaContainer, PostgresContainer):
        assert issubclass(kind, ContainerService)
        for name in ("start", "wait_ready", "stop", "__enter__", "__exit__", "ip", "wrapped"):
            assert name not in vars(kind), f"{kind.__name__} has its own {name}"
    broker = KafkaContainer("kafka:1", "run-7", node_id=2, voters="1@a:9093", alias="kafka-2")
    box = docker.made[-1]
    assert box.env["NODE_ID"] == "2" and box.env["VOTERS"] == "1@a:9093"
    assert box.kw["labels"][RUN_LABEL] == "run-7"
    monkeypatch.setattr(KafkaContainer, "ready", lambda self: True)
    broker.start()
    assert broker.bootstrap == "10.0.0.7:9092"

    class Connection:
        def __enter__(self) -> Connection:
            return self

        def __exit__(self, *exc: object) -> None:
            pass

        def execute(self, sql: str) -> None:
            pass

    monkeypatch.setattr("psycopg.connect", lambda *a, **kw: Connection())
    db = PostgresContainer("postgres:1", "run-7")
    db.start()
    assert db.host == "10.0.0.7" and db.dsn("x") == "postgresql://postgres@10.0.0.7:5432/x"


class _Node:
    """A node whose log grows by one line each time it is read."""

    def __init__(self, lines: list[str], alive: bool = True) -> None:
        self.lines, self.reads, self.alive, self.name = lines, 0, alive, "spark-master"

    def log_text(self) -> str:
        self.reads += 1
        return "".join(line + "\n" for line in self.lines[: self.reads])


def test_wait_log_waits_for_the_line_past_an_offset() -> None:
    node = _Node(["old: ready", "starting", "ready"])
    logwait.wait_log(node, "ready", 5.0, since=len("old: ready\n"), poll_s=0)
    assert node.reads >= 3  # the earlier start's line did not count


def test_wait_log_says_when_the_node_died_or_never_logged() -> None:
    with pytest.raises(RuntimeError, match=r"the server exited before it logged 'ready':\nboot"):
        logwait.wait_log(_Node(["boot"], alive=False), "ready", 5.0, what="the server")
    with pytest.raises(TimeoutError, match=r"spark-master did not log 'ready' in 0s"):
        logwait.wait_log(_Node(["boot"]), "ready", 0.0, poll_s=0)
