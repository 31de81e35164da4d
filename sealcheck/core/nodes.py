"""What every running part of a test is, on either backend, and the optional things nemeses
act on beside nodes.

* :class:`Node`: one lifecycle for every server — a Kafka broker, the database, an incarnation
  of the system under test, a Spark worker — whether a local process or a container. Nemeses
  act on nodes by role (:class:`sealcheck.core.roles.Role`) and never see which kind they are.
* :class:`Incarnation`: a node that is one run of the system under test (the supervisor
  starts it, waits for its exit and stops it).
* :class:`LogFrom`: what a node may offer beside :meth:`Node.log_text` — its log from a byte
  offset on, so a reader that follows a long log reads each byte once.
* :class:`Launch`: how a system under test asks to be started (its descriptor writes it, the
  backend runs it as a process or a container).
* :class:`Disk`: a filesystem that can lose un-fsynced writes (capabilities ``lazy-disk``,
  ``broker-lazy-disk``).
* :class:`Partitions`: network cuts between nodes (capability ``partition``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from sealcheck_failpoint import ENV_VAR as FAILPOINTS_FILE_ENV


class Node(Protocol):
    """One server of a test, local process or container. Each action returns what the history
    records of the node it acted on (a pid or a container name), or None when there was
    nothing to do (not alive, already alive, not frozen)."""

    @property
    def name(self) -> str:
        """Its name in logs and the history (``kafka-1``, ``postgres``, ``sut``)."""

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


class LogFrom(Protocol):
    """Optional beside :class:`Node` (a reader checks for it and falls back on
    :meth:`Node.log_text`): the node's log as raw bytes from a byte offset on. Offsets count
    the same bytes while the node runs and after it exited, so a reader resumes where it
    stopped."""

    def log_from(self, offset: int) -> bytes:
        """What it logged from byte ``offset`` on (empty: nothing more yet)."""


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
    failpoint_env: str = FAILPOINTS_FILE_ENV  # every system's: sealcheck_failpoint.ENV_VAR
    entrypoint: tuple[str, ...] | None = None
    shared: tuple[str, ...] = ()
    #: the directory a local process starts in (None: the harness's own); a job's scratch files
    #: (Spark's ``spark-warehouse/``) land there, not in the user's checkout
    workdir: str | None = None


class Disk(Protocol):
    """A filesystem of the run that can lose what was written but not fsynced
    (:class:`sealcheck.infra.lazy_disk.LazyDisk`; capabilities ``lazy-disk`` and
    ``broker-lazy-disk``)."""

    def drop(self) -> dict[str, Any]:
        """Lose every un-fsynced write now; ``dropped``: the files and bytes lost."""

    def counters(self) -> dict[str, Any]:
        """What is un-fsynced now (``kept_bytes``, ``kept_files``), what drops lost so far, and
        the crash points that fired (``crashes``)."""

    def arm_crash(
        self,
        op: str,
        k: int,
        path: str = "",
        only: int | None = None,
        when: str = "after",
        do: str = "kill",
        errno: str = "EIO",
        slow: str = "",
        slow_ms: int = 0,
        gate: str = "",
        min_write: int = 0,
        watch_until: str = "",
        watch_count: str = "",
        next_call: bool = False,
        spare: tuple[int, ...] = (),
        fresh: bool = False,
    ) -> dict[str, Any]:
        """At the ``k``-th ``op`` (``fsync``, ``rename``, ``create``, ``write``) of one kind
        of file, ``when`` (``after``, ``before``) it is done, ``do`` (``kill`` the caller,
        ``fail`` the call with ``errno``, ``hold`` it until :meth:`release`) inside that call
        (:mod:`sealcheck.infra.crash_points`); with ``gate``, at the first such call after the
        ``k``-th rename of a file matching it; with ``min_write``, an fsync counts only after
        a write of that many bytes to its file; with ``watch_until``, when it fires it starts
        a watch (:meth:`watch`) until that file (``{n}``: the call's batch) of the commits of
        files matching ``watch_count``; with ``next_call``, it fires before the caller's next
        call once the matching one has returned; with ``only``, only that process group
        counts, and never one in ``spare``; with ``fresh``, only one started since the
        arming."""

    def release(self) -> dict[str, Any]:
        """Let a held call go on."""

    def watch(self, until: str, count: str, min_write: int = 0) -> dict[str, Any]:
        """Count the commits of files matching ``count`` until a file matching ``until`` is
        renamed into place (the counters' ``watches``)."""

    def disarm_crash(self) -> dict[str, Any]:
        """Disarm a crash point that has not fired."""


class Partitions(Protocol):
    """Network cuts between nodes (capability ``partition``). A cut's ``kind`` is
    ``sut-<link>`` (the system under test's incarnation cut from the nodes of a role with that
    :attr:`~sealcheck.core.roles.Role.link`: ``sut-kafka``, ``sut-database``), ``broker``
    (isolate one broker from the others) or the one-way ``commit-reply``."""

    def cut(self, kind: str, broker: int) -> dict[str, Any]:
        """Cut a link of ``kind`` (``broker``: which broker to isolate); ``cut`` says which,
        None and ``reason`` if not."""

    def restore(self, kind: str, broker: int) -> dict[str, Any]:
        """Remove exactly the rules of that cut (``healed`` None if it was not cut)."""

    def fired(self, kind: str) -> bool:
        """Whether a cut that arms itself (``commit-reply``: the database's replies, from the
        incarnation's next commit on) has armed."""

    def heal(self) -> list[str]:
        """Remove every cut still in place."""
