"""What every running part of a test is, on either backend.

* :class:`Node`: one lifecycle for every server — a Kafka broker, the database, an incarnation
  of the system under test — whether a local process or a container. Nemeses act on nodes by
  role (``broker``, ``database``, ``pipeline``) and never see which kind they are.
* :class:`Incarnation`: a node that is one run of the system under test (the supervisor
  starts it, waits for its exit and stops it).
* :class:`Launch`: how a system under test asks to be started (its descriptor writes it, the
  backend runs it as a process or a container).
* :class:`Backend`: where a test runs; it starts Kafka (and a database where it has one),
  hands out nodes by role, runs incarnations, and says which optional capabilities it has
  (:data:`CAPABILITIES`), so a fault that needs one it lacks is refused before the run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

#: Optional capabilities a run may offer, and what each is (nemeses and systems under test
#: may require them). The backend offers ``database``, ``partition`` and
#: ``broker-lazy-disk``; the system under test offers ``failpoints`` and, where it can keep its
#: store on one, ``lazy-disk``.
CAPABILITIES = {
    "database": "a database server the system under test can keep its store in",
    "partition": "network partitions between nodes (each node in its own network namespace)",
    "failpoints": "named failpoints in the system under test",
    "lazy-disk": "a store on a filesystem that can lose un-fsynced writes (FUSE; the local "
    "backend's SQLite store)",
    "host-directory": "a directory of the host that incarnations read and write (local "
    "processes; bind-mounted at the same path into containers)",
    "broker-lazy-disk": "brokers' log directories on filesystems that can lose un-fsynced "
    "writes (FUSE; the local backend)",
    "spark-cluster": "a Spark standalone cluster (master and workers) the system under test's "
    "Spark submits to (--spark cluster)",
}


class Node(Protocol):
    """One server of a test, local process or container."""

    @property
    def name(self) -> str:
        """Its name in logs and the history (``kafka-1``, ``postgres``, ``pipeline-3``)."""

    @property
    def ident(self) -> int | str | None:
        """What the history records of it: a pid, or a container name (None: not started)."""

    @property
    def alive(self) -> bool:
        """Whether it runs (frozen counts as alive)."""

    @property
    def frozen(self) -> bool:
        """Whether it is paused."""

    def start(self) -> int | str | None:
        """Start it again and wait until it serves; its ident (None: it was alive)."""

    def kill(self) -> int | str | None:
        """SIGKILL it; the ident killed (None: it was not alive)."""

    def pause(self) -> int | str | None:
        """Freeze it; return once the kernel (or the cgroup) reports it frozen; its ident
        (None: it was not alive)."""

    def resume(self) -> int | str | None:
        """Thaw it; its ident (None: it was not frozen)."""

    def log_text(self) -> str:
        """What it logged so far."""


class Incarnation(Node, Protocol):
    """One run of the system under test."""

    def wait_exit(self) -> int:
        """Block until it exits; the exit code (negative: killed by that signal)."""

    def stop(self, timeout_s: float = 30.0) -> int | None:
        """Stop it cleanly (SIGTERM), forcibly after ``timeout_s``; the exit code."""


@dataclass(frozen=True)
class Launch:
    """How to start one incarnation (or a service of the system under test), on either backend:
    ``args`` are its arguments; locally they follow ``program`` (with ``env`` and ``local_env``
    added to the environment), in containers they are the command of ``image()``'s entrypoint
    — or of ``entrypoint`` when given — with ``env``. The backend tells an incarnation where
    its failpoint file is through ``failpoint_env``. ``shared`` are host directories it reads
    and writes at the same path (capability ``host-directory``: containers get them
    bind-mounted)."""

    program: tuple[str, ...]
    args: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    local_env: Mapping[str, str] = field(default_factory=dict)
    image: Callable[[], str] | None = None
    failpoint_env: str = "SEALCHECK_FAILPOINTS_FILE"
    entrypoint: tuple[str, ...] | None = None
    shared: tuple[str, ...] = ()


class Database(Protocol):
    """A database server of the backend (capability ``database``)."""

    def new_database(self, prefix: str) -> str:
        """Create a fresh, empty database; its name."""

    def dsn(self, database: str, inside: bool = False) -> str:
        """A DSN of ``database``: from the host (at the server's current address, which a
        restart may change), or from inside the run's network (by name)."""


class Backend(Protocol):
    """Where a test runs: ``local`` processes or ``containers``. Built for one run as
    ``Backend(brokers, work, run_id)`` (see :mod:`sealcheck.infra.backends`)."""

    name: ClassVar[str]
    capabilities: ClassVar[frozenset[str]]
    #: whether incarnations run as container images (built before the run starts)
    runs_images: ClassVar[bool]

    def __init__(self, brokers: int, work: Path, run_id: str) -> None:
        """Prepare (not start) ``brokers`` brokers, scratch space in ``work``."""

    @property
    def bootstrap(self) -> str:
        """The brokers, as clients (the host and the incarnations alike) reach them."""

    def start(self, topic: str, partitions: int, lazy_brokers: bool = False) -> None:
        """Start the brokers (and the database, if any) and create the topic; with
        ``lazy_brokers`` (capability ``broker-lazy-disk``), each broker's log directory on a
        lazy disk, made durable once the topic exists."""

    def disks(self) -> Mapping[str, Any]:
        """The brokers' lazy disks by broker name (``kafka-1``), when started with
        ``lazy_brokers``; else empty."""

    def nodes(self, role: str) -> Sequence[Node]:
        """The nodes of a role the backend runs itself: ``broker``, ``database``."""

    def database(self) -> Database | None:
        """The database server (None without the ``database`` capability)."""

    def incarnation(
        self, launch: Launch, name: str, log_path: Path, failpoint_file: Path
    ) -> Incarnation:
        """An unstarted incarnation running ``launch``, its log copied to ``log_path``."""

    def service(self, launch: Launch, name: str, log_path: Path) -> Incarnation:
        """An unstarted long-lived process of the system under test (e.g. its Spark server),
        reachable by other nodes at :meth:`address` ``(name)``."""

    def address(self, name: str) -> str:
        """The host name other nodes reach service ``name`` at."""

    def partitions(self) -> Any:
        """Network cuts (a :class:`sealcheck.nemeses.api.Partitions`) with the ``partition``
        capability, else None. Cuts of the system under test follow it to new incarnations."""

    def stop(self, logs: Path) -> None:
        """Copy every node's log into ``logs``, then stop and remove everything."""
