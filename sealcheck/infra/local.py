"""The local backend (the embedded default): brokers as local processes, each incarnation of
the system under test as a local process group. Its nodes are local processes: kill is
SIGKILL to the group, pause SIGSTOP (returning once the kernel reports the process stopped),
resume SIGCONT. It has no database server and cannot partition (every process shares the
host's network namespace); nemeses that need either are refused before a run."""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from sealcheck.core.nodes import Launch, Node
from sealcheck.core.roles import Role
from sealcheck.infra import procs
from sealcheck.infra.kafka_admin import create_topic
from sealcheck.infra.kafka_local import KafkaCluster, KafkaNode
from sealcheck.infra.lazy_disk import LazyDisk
from sealcheck.infra.node import Database, broker_role


class LocalBroker:
    """A local KRaft broker as a :class:`~sealcheck.core.nodes.Node` (start waits until the cluster
    sees it again)."""

    def __init__(self, cluster: KafkaCluster, node: KafkaNode) -> None:
        self.cluster, self.node = cluster, node
        self._frozen = False

    @property
    def name(self) -> str:
        """``kafka-<node id>``."""
        return f"kafka-{self.node.node_id}"

    @property
    def ident(self) -> int | None:
        """The broker's pid."""
        return self.node.proc.pid if self.node.proc is not None else None

    @property
    def alive(self) -> bool:
        """Whether its JVM runs (frozen counts)."""
        return self.node.running

    @property
    def frozen(self) -> bool:
        """Whether it is SIGSTOPped."""
        return self._frozen and self.alive

    def start(self) -> int | None:
        """Start it again and wait (up to 60 s) until the cluster sees it."""
        if self.alive:
            return None
        self.node.start()
        self._frozen = False
        self.cluster.wait_ready(60.0)
        return self.ident

    def kill(self) -> int | None:
        """SIGKILL it."""
        pid = self.ident if self.alive else None
        self.node.kill()
        return pid

    def pause(self) -> int | None:
        """SIGSTOP it (returns once the kernel reports it stopped)."""
        if not self.alive:
            return None
        self.node.pause()
        self._frozen = True
        return self.ident

    def resume(self) -> int | None:
        """SIGCONT it if it is frozen."""
        if not self.frozen:
            return None
        self.node.resume()
        self._frozen = False
        return self.ident

    def log_text(self) -> str:
        """Its log so far."""
        try:
            return self.node.log_path.read_text(errors="replace")
        except OSError:
            return ""


class LocalProcess:
    """One incarnation as a local process group (:class:`~sealcheck.core.nodes.Incarnation`)."""

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        env: dict[str, str],
        log: Path,
        cwd: Path | None = None,
    ) -> None:
        self.name, self.argv, self.env, self.log_path = name, list(argv), env, log
        self.cwd = cwd
        self.proc: subprocess.Popen[bytes] | None = None
        self._frozen = False

    @property
    def ident(self) -> int | None:
        """Its pid (None before start)."""
        return self.proc.pid if self.proc is not None else None

    @property
    def alive(self) -> bool:
        """Whether it runs (stopped counts)."""
        return self.proc is not None and self.proc.poll() is None

    @property
    def frozen(self) -> bool:
        """Whether it is SIGSTOPped."""
        return self._frozen and self.alive

    def start(self) -> int | None:
        """Spawn it (its own session; it dies with the harness)."""
        if self.alive:
            return None
        if self.cwd is not None:
            self.cwd.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, **self.env}
        self.proc = procs.spawn(self.argv, self.log_path, env=env, cwd=self.cwd)
        return self.ident

    def kill(self) -> int | None:
        """SIGKILL the whole process group (the driver and its JVM)."""
        if not self.alive or self.proc is None:
            return None
        procs.signal_group(self.proc, signal.SIGKILL)
        return self.proc.pid

    def pause(self) -> int | None:
        """SIGSTOP the group; returns once the kernel reports it stopped."""
        if not self.alive or self.proc is None:
            return None
        procs.pause(self.proc)
        self._frozen = True
        return self.proc.pid

    def resume(self) -> int | None:
        """SIGCONT the group if it is stopped."""
        if not self.frozen or self.proc is None:
            return None
        procs.resume(self.proc)
        self._frozen = False
        return self.proc.pid

    def wait_exit(self) -> int:
        """Block until it exits; its exit code (negative: killed by that signal)."""
        assert self.proc is not None, "start() first"
        return self.proc.wait()

    def stop(self, timeout_s: float = 30.0) -> int | None:
        """SIGTERM, then SIGKILL after ``timeout_s``; the exit code."""
        return procs.terminate(self.proc, timeout_s) if self.proc is not None else None

    def log_text(self) -> str:
        """Everything it logged so far."""
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def log_from(self, offset: int) -> bytes:
        """What it logged from byte ``offset`` of its log file on
        (:class:`~sealcheck.core.nodes.LogFrom`): read from there, not from the start."""
        try:
            with open(self.log_path, "rb") as fh:
                fh.seek(offset)
                return fh.read()
        except OSError:
            return b""


class LocalBackend:
    """Kafka (1 or 3 local brokers) under ``work/``; incarnations as local processes."""

    name: ClassVar[str] = "local"
    capabilities: ClassVar[frozenset[str]] = frozenset(
        {"broker-lazy-disk", "host-directory", "host-processes"}
    )
    runs_images: ClassVar[bool] = False

    def __init__(self, brokers: int, work: Path, run_id: str = "") -> None:
        self.cluster = KafkaCluster(work / "kafka", size=brokers)
        # Spark's scratch (``blockmgr-*``, ``spark-*``) and the JVM's temporary files under the
        # run's work directory, which the run removes: a JVM killed with SIGKILL never deletes
        # its own from /tmp. Absolute: a job's processes start in a directory of their own
        self.scratch = work.absolute() / "spark-local"
        self.brokers = [LocalBroker(self.cluster, n) for n in self.cluster.nodes]
        self._disks: dict[str, LazyDisk] = {}
        #: the running broker this run uses instead of its own (:meth:`borrow`), if any
        self.borrowed: str | None = None

    @classmethod
    def roles(cls, brokers: int) -> Mapping[str, Role]:
        """Its brokers (``broker``); it runs no other node of its own."""
        return {"broker": broker_role(brokers)}

    @property
    def bootstrap(self) -> str:
        """The brokers' client listeners (the borrowed broker's, when borrowing)."""
        return self.borrowed or self.cluster.bootstrap

    def borrow(self, bootstrap: str) -> None:
        """Use the running broker at ``bootstrap`` (a pytest session's) instead of starting
        brokers of its own: :meth:`start` then only creates the topic, :meth:`stop` leaves the
        broker running, and no node has the role ``broker``.
        For a run none of whose faults acts on a broker (``harness/run/shared_kafka.py``)."""
        self.borrowed = bootstrap
        self.brokers = []

    def start(self, topic: str, partitions: int, lazy_brokers: bool = False) -> None:
        """Start the brokers and create the topic (replicated on every broker); on a borrowed
        broker, only the topic. With ``lazy_brokers`` each broker's log directory is a lazy
        mount over ``data-durable`` beside it, synced once the topic exists: a drop then loses
        what the run wrote, never the broker's formatting."""
        if self.borrowed:
            create_topic(self.borrowed, topic, partitions, 1)
            return
        if lazy_brokers:
            for broker in self.brokers:
                node = broker.node
                disk = LazyDisk(
                    node.directory / "data-durable", node.data_dir, node.directory / "lazyfs.log"
                )
                self._disks[broker.name] = disk
                disk.start()
        self.cluster.start()
        self.cluster.create_topic(topic, partitions, len(self.cluster.nodes))
        for disk in self._disks.values():
            disk.sync()

    def disks(self) -> Mapping[str, Any]:
        """The brokers' lazy disks by broker name (empty unless started lazy)."""
        return dict(self._disks)

    def nodes(self, role: str) -> Sequence[Node]:
        """The brokers (``broker``); no other role runs here."""
        return self.brokers if role == "broker" else []

    def database(self) -> Database | None:
        """None: the local backend has no database server."""
        return None

    def incarnation(
        self, launch: Launch, name: str, log_path: Path, failpoint_file: Path
    ) -> LocalProcess:
        """``launch`` as a local process: its program and arguments, its environment plus
        where its failpoint file is (an absolute path: the process may start in a directory
        of its own, ``launch.workdir``, where a relative one would name no file, and a
        failpoint that finds no file never fires)."""
        env = {
            **self._scratch_env(name),
            **launch.env,
            **launch.local_env,
            launch.failpoint_env: str(failpoint_file.absolute()),
        }
        cwd = Path(launch.workdir) if launch.workdir else None
        return LocalProcess(name, [*launch.program, *launch.args], env, log_path, cwd)

    def service(self, launch: Launch, name: str, log_path: Path) -> LocalProcess:
        """``launch`` as a long-lived local process, started in its scratch directory unless
        the launch names one: a Spark driver makes ``artifacts/spark-<uuid>`` in its working
        directory, which would otherwise be the user's."""
        env = {**self._scratch_env(name), **launch.env, **launch.local_env}
        cwd = Path(launch.workdir) if launch.workdir else self.scratch / name
        cwd.mkdir(parents=True, exist_ok=True)
        return LocalProcess(name, [*launch.program, *launch.args], env, log_path, cwd)

    def _scratch_env(self, name: str) -> dict[str, str]:
        """Where the process ``name`` keeps Spark's scratch, under the run's work directory:
        ``SPARK_LOCAL_DIRS`` (the block manager's) and, for the JVMs ``spark-submit`` starts
        (a job's driver, the Spark Connect server), their temporary directory
        (``-Djava.io.tmpdir`` in ``SPARK_SUBMIT_OPTS``, quoted as Spark's launcher splits it:
        ``spark-submit`` makes a ``spark-<uuid>`` directory there and extracts native
        libraries). Each is left out when the harness's own environment sets that variable
        (the user chose), and a launch that sets it wins. Spark splits its local
        directories (``SPARK_LOCAL_DIRS``, else the JVM's temporary directory) at commas: a
        work directory with a comma in its path gets neither, and Spark's defaults."""
        directory = self.scratch / name
        if "," in str(directory):
            return {}
        env = {
            "SPARK_LOCAL_DIRS": str(directory),
            "SPARK_SUBMIT_OPTS": "-Djava.io.tmpdir=" + shlex.quote(str(directory)),
        }
        env = {k: v for k, v in env.items() if k not in os.environ}
        if env:
            directory.mkdir(parents=True, exist_ok=True)
        return env

    def address(self, name: str) -> str:
        """Every local process listens on loopback."""
        return "127.0.0.1"

    def partitions(self) -> None:
        """None: local processes share the host's network namespace."""
        return None

    def stop(self, logs: Path) -> None:
        """Stop the brokers and unmount their lazy disks; keep their logs (a borrowed broker
        is left as it runs)."""
        if self.borrowed:
            return
        try:
            self.cluster.stop()
        finally:
            for name, disk in self._disks.items():
                try:
                    disk.stop()
                except Exception as exc:  # teardown goes on; Ctrl-C does not
                    print(f"warning: unmounting {name}'s lazy disk: {exc}")
                if disk.log.exists():
                    shutil.copy(disk.log, logs / f"lazyfs-{name}.log")
        for node in self.cluster.nodes:
            if node.log_path.exists():
                shutil.copy(node.log_path, logs / f"kafka-{node.node_id}.log")
