"""Where a test runs: the :class:`Backend` protocol, its :class:`Database`, and the roles of the
nodes a backend runs itself.

* :class:`Backend`: where a test runs; it starts Kafka (and a database where it has one),
  hands out nodes by role (:class:`sealcheck.core.nodes.Node`), runs incarnations, says which
  optional capabilities it has (:data:`sealcheck.core.capabilities.CAPABILITIES`), so a fault
  that needs one it lacks is refused before the run, and declares the roles of its nodes
  (:meth:`Backend.roles`: :func:`broker_role`, :data:`DATABASE`).
* :class:`Database`: the backend's database server, which a system under test may keep its
  store in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Protocol

from sealcheck.core.nodes import Incarnation, Launch, Node
from sealcheck.core.roles import Role


def broker_role(count: int) -> Role:
    """The Kafka brokers of a run: ``count`` of them, an action names one by ``broker`` (its
    index), and the system under test's link to them is ``kafka`` (partition kind
    ``sut-kafka``)."""
    return Role("broker", count, index_key="broker", link="kafka")


#: The database server of the backend (the containers backend's PostgreSQL), one node. A run
#: has it only where the system under test keeps its store in it (capability ``database``,
#: which the system offers), so a fault aimed at it never hits a server the system does not
#: use. Its actions say ``postgres`` (``kill-postgres``, ``start-postgres``), as stored
#: schedules do.
DATABASE = Role("database", requires=frozenset({"database"}), noun="postgres", link="database")


class Database(Protocol):
    """A database server of the backend, which a system under test may keep its store in."""

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

    @classmethod
    def roles(cls, brokers: int) -> Mapping[str, Role]:
        """The roles of the nodes it runs itself with ``brokers`` brokers: ``broker``, and
        ``database`` where it has a database server (a run keeps a role only where what it
        ``requires`` is offered)."""

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
        """The database server (None where the backend has none)."""

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
        """Network cuts (a :class:`sealcheck.core.nodes.Partitions`) with the ``partition``
        capability, else None. Cuts of the system under test follow it to new incarnations."""

    def stop(self, logs: Path) -> None:
        """Copy every node's log into ``logs``, then stop and remove everything."""
