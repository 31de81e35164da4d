"""The containers backend: brokers, PostgreSQL and incarnations of the system under test in
containers on the run's network, and what nemeses act on there — containers through the Docker
API (kill, start, pause with the cgroup freezer) and real partitions with iptables inside a
container's own network namespace (capability ``partition``), and host directories an
incarnation shares with the harness bind-mounted (``host-directory``). Its PostgreSQL server is
the ``database`` role of a run whose system under test keeps its store there (the system offers
capability ``database`` on this backend)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from sealcheck.core.nodes import Launch, Node
from sealcheck.core.roles import SUT, Role
from sealcheck.infra.containers.cuts import CommitReplyCut, Cut
from sealcheck.infra.containers.images import kafka_image, postgres_image
from sealcheck.infra.containers.topology import FAILPOINT_DIR, SutContainer, Topology, container_ip
from sealcheck.infra.kafka_admin import create_topic
from sealcheck.infra.node import DATABASE, broker_role

#: The links cut from the system under test: to the brokers' and the database's roles.
_SUT_KAFKA = f"{SUT.name}-{broker_role(0).link}"
_SUT_DATABASE = f"{SUT.name}-{DATABASE.link}"
#: Every kind of cut this backend makes.
KINDS = (_SUT_KAFKA, _SUT_DATABASE, "broker", "commit-reply")


class ContainerNode:
    """A broker or the database as a :class:`~sealcheck.core.nodes.Node`: the Docker API acts on its
    container; ``ready`` waits after a start until it serves again."""

    def __init__(self, name: str, box: Callable[[], Any], ready: Callable[[], None]) -> None:
        self.name, self._box, self._ready = name, box, ready

    def _status(self) -> str:
        box = self._box()
        box.reload()
        return str(box.status)

    @property
    def ident(self) -> str:
        """The container's name."""
        return str(self._box().name)

    @property
    def alive(self) -> bool:
        """Whether the container runs (paused counts)."""
        return self._status() in ("running", "paused")

    @property
    def frozen(self) -> bool:
        """Whether it is paused."""
        return self._status() == "paused"

    def start(self) -> str | None:
        """Start the container again and wait until it serves."""
        if self.alive:
            return None
        self._box().start()
        self._ready()
        return self.ident

    def kill(self) -> str | None:
        """SIGKILL the container."""
        if not self.alive:
            return None
        self._box().kill()
        return self.ident

    def pause(self) -> str | None:
        """Freeze the container (cgroup freezer)."""
        if not self.alive:
            return None
        self._box().pause()
        return self.ident

    def resume(self) -> str | None:
        """Thaw the container if it is paused."""
        if not self.frozen:
            return None
        self._box().unpause()
        return self.ident

    def log_text(self) -> str:
        """The container's log."""
        with contextlib.suppress(Exception):
            return str(self._box().logs().decode(errors="replace"))
        return ""


class ContainerDatabase:
    """The run's PostgreSQL server (:class:`~sealcheck.infra.node.Database`)."""

    def __init__(self, topo: Topology) -> None:
        self.topo = topo

    def new_database(self, prefix: str) -> str:
        """Create an empty database; its name."""
        return self.topo.postgres.new_database(prefix).rsplit("/", 1)[1]

    def dsn(self, database: str, inside: bool = False) -> str:
        """From inside the network by name (``postgres``), from the host by current IP."""
        if inside:
            return f"postgresql://postgres@postgres:5432/{database}"
        return self.topo.postgres.dsn(database)


class ContainerPartitions:
    """Cuts with iptables in one container's namespace (:class:`sealcheck.core.nodes.Partitions`).

    Kinds: ``sut-kafka`` (the current incarnation cut from every broker), ``sut-database``
    (from the database), ``broker`` (one broker from the other two), and the one-way
    ``commit-reply`` (the database's replies to the current incarnation, from its next commit
    on). An incarnation started during a ``sut-*`` cut gets the same rules in its new
    namespace; a ``commit-reply`` cut stays with the incarnation it caught."""

    def __init__(self, topo: Topology, current: Callable[[], SutContainer | None]) -> None:
        self.topo, self.current = topo, current
        self.tag = f"sealcheck:{topo.run_id}"
        self.cuts: dict[tuple[str, int], Cut] = {}
        self._serial = 0  # numbers the commit-reply cuts (each has its own recent-list)

    def _cut(self, kind: str, broker: int) -> Cut | None:
        if kind == "broker":
            box = self.topo.brokers[broker].wrapped
            box.reload()
            peers = [b.ip() for i, b in enumerate(self.topo.brokers) if i != broker]
            return Cut(int(box.attrs["State"]["Pid"]), tuple(peers), self.tag)
        inc = self.current()
        pid = inc.pid if inc is not None and inc.alive else None
        if pid is None:
            return None
        if kind == _SUT_KAFKA:
            peers = [b.ip() for b in self.topo.brokers]
        elif kind in (_SUT_DATABASE, "commit-reply"):
            peers = [container_ip(self.topo.postgres.container.get_wrapped_container())]
        else:
            return None
        if kind == "commit-reply":
            self._serial += 1
            return CommitReplyCut(pid, tuple(peers), self.tag, serial=self._serial)
        return Cut(pid, tuple(peers), self.tag)

    def cut(self, kind: str, broker: int) -> dict[str, Any]:
        """Cut the link; the rules added are returned (and recorded in the history).
        ``commit-reply`` is one-way and arms itself at the incarnation's next commit
        (:class:`~sealcheck.infra.containers.cuts.CommitReplyCut`); one that has fired, or was left
        in
        the namespace of an incarnation that is gone, is replaced."""
        key = (kind, broker if kind == "broker" else 0)
        old = self.cuts.get(key)
        inc = self.current()
        gone = inc is None or not inc.alive or inc.pid != (old.pid if old else None)
        if kind == "commit-reply" and old is not None and (gone or self.fired(kind)):
            old.heal()  # gone with its incarnation, or spent: a fresh cut replaces it
            del self.cuts[key]
        if key in self.cuts:
            return {"cut": None, "reason": "already cut"}
        cut = self._cut(kind, broker)
        if cut is None and kind not in KINDS:
            return {"cut": None, "reason": f"no link {kind!r} here; kinds: {', '.join(KINDS)}"}
        if cut is None:
            return {"cut": None, "reason": "no incarnation of the system under test running"}
        self.cuts[key] = cut
        cut.apply()
        return {"cut": kind, "pid": cut.pid, "peers": list(cut.peers), "rules": len(cut.rules)}

    def restore(self, kind: str, broker: int) -> dict[str, Any]:
        """Remove exactly that cut's rules."""
        cut = self.cuts.pop((kind, broker if kind == "broker" else 0), None)
        if cut is None:
            return {"healed": None}
        return {"healed": kind, "deleted": cut.heal()}

    def fired(self, kind: str) -> bool:
        """Whether the ``commit-reply`` cut in place has armed itself at a commit."""
        cut = self.cuts.get((kind, 0))
        return isinstance(cut, CommitReplyCut) and cut.fired()

    def heal(self) -> list[str]:
        """Remove every cut still in place."""
        out = [f"{k[0]}: deleted {c.heal()} rules" for k, c in self.cuts.items()]
        self.cuts.clear()
        return out

    def follow(self, incarnation: SutContainer) -> None:
        """Cut a new incarnation's links like its predecessor's were."""
        pid = incarnation.pid
        for (kind, _), cut in list(self.cuts.items()):
            if kind.startswith(f"{SUT.name}-") and pid is not None and cut.pid != pid:
                cut.heal()  # the old namespace is gone; this only forgets its rules
                cut.pid = pid
                with contextlib.suppress(Exception):
                    cut.apply()


def _wrapped(broker: Any) -> Callable[[], Any]:
    """The docker container of a broker, looked up when needed (it exists once started)."""
    return lambda: broker.wrapped


class ContainersBackend:
    """The run's containers (see :mod:`sealcheck.infra.containers.topology`)."""

    name: ClassVar[str] = "containers"
    #: (``database`` is the system's to offer: it says whether it keeps its store in the
    #: backend's PostgreSQL)
    capabilities: ClassVar[frozenset[str]] = frozenset({"partition", "host-directory"})
    runs_images: ClassVar[bool] = True

    @classmethod
    def roles(cls, brokers: int) -> Mapping[str, Role]:
        """Its brokers (``broker``) and PostgreSQL (``database``: a run keeps it only where the
        system under test keeps its store there)."""
        return {"broker": broker_role(brokers), DATABASE.name: DATABASE}

    def __init__(self, brokers: int, work: Path, run_id: str) -> None:
        self.work = work
        self.topo = Topology(
            run_id, brokers, {"kafka": kafka_image(), "postgres": postgres_image()}
        )
        self._current: SutContainer | None = None
        self._cuts = ContainerPartitions(self.topo, lambda: self._current)
        self.brokers = [
            ContainerNode(f"kafka-{i + 1}", _wrapped(b), self._brokers_ready)
            for i, b in enumerate(self.topo.brokers)
        ]
        self.postgres = ContainerNode(
            "postgres",
            lambda: self.topo.postgres.container.get_wrapped_container(),
            self.topo.postgres.start_wait,
        )

    def _brokers_ready(self) -> None:
        self.topo.wait_brokers(len(self.topo.brokers), 90)

    @property
    def bootstrap(self) -> str:
        """Every broker's ``ip:9092`` (reachable from the host and from the network)."""
        return self.topo.bootstrap

    def start(self, topic: str, partitions: int, lazy_brokers: bool = False) -> None:
        """Start brokers and PostgreSQL, create the topic. Brokers on lazy disks are the
        local backend's (``broker-lazy-disk``): the config check refuses them here first."""
        if lazy_brokers:
            raise ValueError(
                "the containers backend cannot put brokers on lazy disks "
                "(nemesis lost-writes-kafka): use --backend local"
            )
        self.topo.start()
        create_topic(self.bootstrap, topic, partitions, len(self.topo.brokers))

    def disks(self) -> Mapping[str, Any]:
        """None: the brokers keep their logs on the containers' own disks."""
        return {}

    def nodes(self, role: str) -> Sequence[Node]:
        """``broker``: the broker containers; ``database``: PostgreSQL."""
        return {"broker": self.brokers, "database": [self.postgres]}.get(role, [])

    def database(self) -> ContainerDatabase:
        """The run's PostgreSQL server."""
        return ContainerDatabase(self.topo)

    def incarnation(
        self, launch: Launch, name: str, log_path: Path, failpoint_file: Path
    ) -> SutContainer:
        """``launch`` as a container of its image on the run's network; its failpoint file's
        directory and its shared directories are mounted inside, and network cuts follow it
        when it starts."""
        if launch.image is None:
            raise ValueError(f"{name}: this system under test has no container image")
        env = {**launch.env, launch.failpoint_env: f"{FAILPOINT_DIR}/{failpoint_file.name}"}

        def started(box: SutContainer) -> None:
            self._current = box
            self._cuts.follow(box)

        return SutContainer(
            self.topo,
            name,
            launch.image(),
            list(launch.args),
            env,
            log_path,
            failpoint_file.parent,
            on_start=started,
            entrypoint=list(launch.entrypoint) if launch.entrypoint else None,
            shared=launch.shared,
        )

    def service(self, launch: Launch, name: str, log_path: Path) -> SutContainer:
        """``launch`` as a long-lived container named after the run and ``name`` (other
        containers reach it by that name on the run's network)."""
        if launch.image is None:
            raise ValueError(f"{name}: this system under test has no container image")
        return SutContainer(
            self.topo,
            name,
            launch.image(),
            list(launch.args),
            dict(launch.env),
            log_path,
            None,
            entrypoint=list(launch.entrypoint) if launch.entrypoint else None,
            hostname=self.address(name),
            shared=launch.shared,
        )

    def address(self, name: str) -> str:
        """The container name of service ``name``: the run's network name plus ``name``."""
        return f"{self.topo.network_name}-{name}"

    def partitions(self) -> ContainerPartitions:
        """Cuts inside the containers' namespaces."""
        return self._cuts

    def stop(self, logs: Path) -> None:
        """Keep the brokers' and PostgreSQL's logs, then remove every container and the
        network."""
        for node in (*self.brokers, self.postgres):
            with contextlib.suppress(Exception):
                (logs / f"{node.name}.log").write_text(node.log_text())
        self.topo.stop()
