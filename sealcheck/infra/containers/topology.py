"""The containers topology of one run: a user-defined Docker network labelled with the run id,
three (or one) KRaft brokers, a PostgreSQL server, and incarnations of the system under test
as containers.

Why a user-defined network (not host networking): each run is isolated from the host and from
other runs, containers find each other by name (the KRaft voters are ``kafka-<n>:9093``), and
every container has its own network namespace, which is what makes real partitions possible
(iptables rules inside one container's namespace cut exactly that container's links). The host
reaches every container at its IP over the bridge, so no ports are published.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker
from confluent_kafka.admin import AdminClient
from testcontainers.core.network import Network

from sealcheck.infra.containers.kafka import RUN_LABEL, KafkaContainer
from sealcheck.infra.containers.postgres import PostgresContainer
from sealcheck.infra.containers.service import container_ip as container_ip  # (re-exported)
from sealcheck.infra.containers.service import owned_labels

#: Where an incarnation's failpoint directory is mounted inside its container.
FAILPOINT_DIR = "/run/sealcheck"


class Topology:
    """Brokers and PostgreSQL on the run's network (incarnations: :class:`SutContainer`)."""

    def __init__(self, run_id: str, brokers: int, images: dict[str, str]) -> None:
        self.run_id, self.images = run_id, images
        self.client = docker.from_env()
        self.network_name = f"sealcheck-{run_id}"
        self.labels = owned_labels(run_id)
        self.tc_network = Network(docker_network_kw={"labels": self.labels, "driver": "bridge"})
        self.tc_network.name = self.network_name
        voters = ",".join(f"{i + 1}@kafka-{i + 1}:9093" for i in range(brokers))
        self.brokers = [
            KafkaContainer(
                images["kafka"],
                run_id,
                heap_mb=384,
                node_id=i + 1,
                voters=voters,
                replication=brokers,
                network=self.tc_network,
                alias=f"kafka-{i + 1}",
                labels=self.labels,
            )
            for i in range(brokers)
        ]
        self.postgres = PostgresContainer(
            images["postgres"], run_id, self.tc_network, labels=self.labels
        )

    @property
    def bootstrap(self) -> str:
        """Every broker's ``ip:9092``."""
        return ",".join(f"{b.ip()}:9092" for b in self.brokers)

    def start(self, timeout_s: float = 120.0) -> None:
        """Create the network, start the brokers and PostgreSQL, wait for all of them."""
        self.tc_network.create()
        for b in self.brokers:
            b.start(wait=False)
        self.postgres.start(timeout_s)
        self.wait_brokers(len(self.brokers), timeout_s)

    def wait_brokers(self, count: int, timeout_s: float = 120.0) -> None:
        """Wait until ``count`` brokers are registered in the cluster."""
        deadline = time.monotonic() + timeout_s
        seen = 0
        while time.monotonic() < deadline:
            admin = AdminClient({"bootstrap.servers": self.bootstrap, "log_level": 0})
            try:
                seen = len(admin.list_topics(timeout=2).brokers)
            except Exception:  # still starting
                seen = 0
            if seen >= count:
                return
            time.sleep(0.5)
        raise TimeoutError(f"{seen}/{count} brokers registered after {timeout_s:.0f}s")

    def stop(self) -> None:
        """Remove every container and the network; keeps going past errors."""
        boxes: list[Any] = [*self.brokers, self.postgres]
        for box in boxes:
            with contextlib.suppress(Exception):
                box.stop()
        remove_labelled(self.client, self.run_id)
        self.client.close()


@dataclass(frozen=True)
class Labelled:
    """A container or network Sealcheck started (:data:`RUN_LABEL`), with its labels."""

    kind: str  # "container" or "network"
    name: str
    labels: Mapping[str, str]
    obj: Any  # the docker SDK object

    def remove(self) -> bool:
        """Remove it (a container forcibly, with its volumes); whether that worked."""
        try:
            if self.kind == "container":
                self.obj.remove(force=True, v=True)
            else:
                self.obj.remove()
        except Exception:  # gone meanwhile, or the engine refused: the caller lists what went
            return False
        return True


def labelled(client: Any, run_id: str | None = None) -> list[Labelled]:
    """The containers, then the networks, labelled as Sealcheck's (of run ``run_id`` only,
    when given)."""
    label = RUN_LABEL if run_id is None else f"{RUN_LABEL}={run_id}"

    def labels(obj: Any) -> Mapping[str, str]:
        found = obj.attrs.get("Labels") or obj.attrs.get("Config", {}).get("Labels")
        return found or {}

    boxes = client.containers.list(all=True, filters={"label": label})
    nets = client.networks.list(filters={"label": label})
    return [
        *(Labelled("container", c.name, labels(c), c) for c in boxes),
        *(Labelled("network", n.name, labels(n), n) for n in nets),
    ]


def remove_labelled(client: Any, run_id: str) -> list[str]:
    """Remove the containers and networks labelled with ``run_id``; what was removed."""
    return [f"{x.kind} {x.name}" for x in labelled(client, run_id) if x.remove()]


class SutContainer:
    """One incarnation of the system under test as a container (the
    :class:`~sealcheck.core.nodes.Incarnation` protocol). Its failpoint directory is bind-mounted at
    :data:`FAILPOINT_DIR`; its log is copied to ``log_path`` when it exits and the container is
    removed; ``on_start`` runs once it is up (the backend re-applies network cuts there)."""

    def __init__(
        self,
        topo: Topology,
        name: str,
        image: str,
        command: list[str],
        env: dict[str, str],
        log_path: Path,
        failpoints_dir: Path | None,
        on_start: Callable[[SutContainer], None] | None = None,
        entrypoint: list[str] | None = None,
        hostname: str | None = None,
        shared: tuple[str, ...] = (),
    ) -> None:
        self.topo, self.name, self.image, self.command = topo, name, image, command
        self.env, self.log_path, self.failpoints_dir = env, log_path, failpoints_dir
        self.on_start, self.entrypoint, self.hostname = on_start, entrypoint, hostname
        self.shared = shared
        self.container: Any = None
        self._code: int | None = None
        self._pid: int | None = None
        self._frozen = False

    @property
    def pid(self) -> int | None:
        """The container's init process id on the host (kept after it exits)."""
        if self._pid is None and self.container is not None:
            with contextlib.suppress(Exception):
                self.container.reload()
                self._pid = int(self.container.attrs["State"]["Pid"]) or None
        return self._pid

    @property
    def ident(self) -> int | None:
        """Its host pid (what the history records)."""
        return self.pid

    @property
    def alive(self) -> bool:
        """Whether the container runs (or is paused)."""
        if self.container is None or self._code is not None:
            return False
        with contextlib.suppress(Exception):
            self.container.reload()
            return bool(self.container.status in ("running", "paused"))
        return False

    @property
    def frozen(self) -> bool:
        """Whether it is paused."""
        return self._frozen and self.alive

    def ip(self) -> str:
        """The incarnation's IP on the run's network."""
        return container_ip(self.container)

    def start(self) -> int | None:
        """Start the container on the run's network; a service container that was killed
        starts again as itself (same name and address). None when it runs."""
        if self.container is not None:
            if self.alive:
                return None
            self.container.start()  # a removed incarnation raises: it is never restarted
            self._pid, self._code, self._frozen = None, None, False
            return self.pid
        extra: dict[str, Any] = {}
        # Docker binds absolute paths only (a relative one is taken for a volume's name): a
        # run directory under a relative --runs (the default, runs/) is resolved here
        shared = [str(Path(d).resolve()) for d in self.shared]
        volumes = {d: {"bind": d, "mode": "rw"} for d in shared}  # same path inside
        if self.failpoints_dir is not None:
            self.failpoints_dir.mkdir(parents=True, exist_ok=True)
            volumes[str(self.failpoints_dir.resolve())] = {"bind": FAILPOINT_DIR, "mode": "rw"}
        if volumes:
            extra["volumes"] = volumes
        if self.entrypoint is not None:
            extra["entrypoint"] = self.entrypoint
        if self.hostname is not None:  # other containers reach it by this name
            extra["name"] = self.hostname
        self.container = self.topo.client.containers.run(
            self.image,
            command=self.command,
            detach=True,
            network=self.topo.network_name,
            labels=self.topo.labels,
            environment=self.env,
            mem_limit="2g",
            # Docker's init as PID 1: a process that is PID 1 of its namespace ignores a
            # SIGKILL it sends itself, so a crash failpoint would log and carry on
            init=True,
            **extra,
        )
        pid = self.pid  # remember the host pid while the container runs
        if self.on_start is not None:
            self.on_start(self)
        return pid

    def wait_exit(self) -> int:
        """Wait for exit; 128+n exit statuses become -n, as for local processes."""
        status = int(self.container.wait()["StatusCode"])
        self._code = -(status - 128) if status > 128 else status
        with contextlib.suppress(Exception):
            self.log_path.write_bytes(self.container.logs())
        with contextlib.suppress(Exception):
            self.container.remove(force=True)
        return self._code

    def kill(self) -> int | None:
        """SIGKILL the container's processes."""
        if not self.alive:
            return None
        with contextlib.suppress(Exception):
            self.container.kill()
        return self.pid

    def pause(self) -> int | None:
        """Freeze the container (cgroup freezer)."""
        if not self.alive:
            return None
        self.container.pause()
        self._frozen = True
        return self.pid

    def resume(self) -> int | None:
        """Thaw the container."""
        if not self.frozen:
            return None
        with contextlib.suppress(Exception):
            self.container.unpause()
        self._frozen = False
        return self.pid

    def stop(self, timeout_s: float = 30.0) -> int | None:
        """SIGTERM (clean stop between steps), SIGKILL after ``timeout_s``."""
        if self.container is None or self._code is not None:
            return self._code
        with contextlib.suppress(Exception):
            self.container.unpause()
        with contextlib.suppress(Exception):
            self.container.stop(timeout=int(timeout_s))
        with contextlib.suppress(Exception):  # a service has nobody in wait_exit to save it
            self.log_path.write_bytes(self.container.logs())
        return self._code

    def log_text(self) -> str:
        """What the incarnation logged so far (the same bytes, decoded the same way, while it
        runs and once its log is copied: a lone ``\\r`` stays one)."""
        return self.log_from(0).decode(errors="replace")

    def log_from(self, offset: int) -> bytes:
        """What it logged from byte ``offset`` on (:class:`~sealcheck.core.nodes.LogFrom`):
        Docker's log while it runs, the copy of it in ``log_path`` once it exited — the same
        bytes, so an offset means the same on both. (Docker serves a log only whole: while it
        runs, each call still fetches it all, but a reader splits only what is new.)"""
        if self._code is not None or self.container is None:
            with contextlib.suppress(OSError), open(self.log_path, "rb") as fh:
                fh.seek(offset)
                return fh.read()
            return b""
        with contextlib.suppress(Exception):
            return bytes(self.container.logs())[offset:]
        return b""
