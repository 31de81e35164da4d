"""Kafka brokers as local processes: KRaft combined mode on 127.0.0.1 (the embedded default).

A :class:`KafkaNode` is one ``kafka.Kafka`` JVM acting as broker and controller. A
:class:`KafkaCluster` is one node (the default) or three on distinct ports with replication
factor 3 and ``min.insync.replicas`` 2. Nodes can be stopped, killed with SIGKILL, paused
with SIGSTOP and resumed; every node logs to ``<dir>/node-<id>/kafka.log``.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
import signal
import socket
import subprocess
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from tenacity import retry, retry_if_exception_type, stop_after_delay, wait_fixed

from sealcheck.infra import procs
from sealcheck.infra.jars import kafka_classpath
from sealcheck.infra.kafka_admin import admin_client, create_topic


class KafkaStartError(RuntimeError):
    """A broker did not become ready; the message carries the tail of its log."""


def free_ports(count: int) -> list[int]:
    """``count`` distinct TCP ports on 127.0.0.1 that are free right now.

    All sockets stay bound until every port is chosen, so the kernel cannot hand out the same
    port twice (closing each socket at once let a later call reuse an earlier port)."""
    with contextlib.ExitStack() as stack:
        ports = []
        for _ in range(count):
            s = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            s.bind(("127.0.0.1", 0))
            ports.append(int(s.getsockname()[1]))
        return ports


def cluster_id(base_dir: Path) -> str:
    """A KRaft cluster id (16 bytes, base64url) derived from the data directory.

    base64url has ``-`` among its digits, and an id starting with it is read as an option by
    ``kafka-storage format -t <id>`` (one path in 64 did that): the next digest is taken then."""
    seed = str(base_dir.resolve()).encode()
    for salt in range(1000):
        salted = seed + (b"\0" + str(salt).encode() if salt else b"")
        digest = hashlib.sha256(salted).digest()[:16]
        text = base64.urlsafe_b64encode(digest).decode().rstrip("=")
        if not text.startswith("-"):
            return text
    raise AssertionError("unreachable: 1000 digests all began with '-'")


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


@dataclass
class KafkaNode:
    """One KRaft broker+controller process; ``voters`` is the cluster's quorum string."""

    node_id: int
    directory: Path
    port: int
    controller_port: int
    voters: str
    replication: int
    heap_mb: int = 512
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def bootstrap(self) -> str:
        """``host:port`` of this node's client listener."""
        return f"127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        """The node's stdout/stderr log."""
        return self.directory / "kafka.log"

    @property
    def data_dir(self) -> Path:
        """The node's ``log.dirs``."""
        return self.directory / "data"

    def _properties(self) -> str:
        rf = self.replication
        isr = 2 if rf >= 3 else 1
        lines = {
            "process.roles": "broker,controller",
            "node.id": str(self.node_id),
            "controller.quorum.voters": self.voters,
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},"
            f"CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.data_dir),
            "num.partitions": "1",
            "default.replication.factor": str(rf),
            "min.insync.replicas": str(isr),
            "offsets.topic.replication.factor": str(rf),
            "transaction.state.log.replication.factor": str(rf),
            "transaction.state.log.min.isr": str(isr),
            "share.coordinator.state.topic.replication.factor": str(rf),
            "share.coordinator.state.topic.min.isr": str(isr),
            "auto.create.topics.enable": "false",
            "unclean.leader.election.enable": "false",
            "group.initial.rebalance.delay.ms": "0",
            "num.network.threads": "2",
            "num.io.threads": "2",
            "background.threads": "2",
        }
        return "".join(f"{k}={v}\n" for k, v in lines.items())

    def _java(self, main: str, *args: str) -> list[str]:
        log4j = resources.files("sealcheck.infra") / "resources" / "kafka-log4j2.properties"
        return [
            "java",
            f"-Xms{min(256, self.heap_mb)}m",
            f"-Xmx{self.heap_mb}m",
            "-XX:+UseG1GC",
            "-XX:MaxGCPauseMillis=20",
            "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={log4j}",
            f"-Dkafka.logs.dir={self.directory}",
            "-cp",
            kafka_classpath(),
            main,
            *args,
        ]

    def format(self, cluster_id: str) -> None:
        """Write ``server.properties`` and format storage (skipped if already formatted)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        props = self.directory / "server.properties"
        props.write_text(self._properties())
        if (self.data_dir / "meta.properties").exists():
            return
        cmd = self._java("kafka.tools.StorageTool", "format", "-t", cluster_id, "-c", str(props))
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=120)
        except subprocess.TimeoutExpired as exc:
            raise KafkaStartError(
                f"formatting node {self.node_id} in {self.data_dir} did not finish in 120s "
                f"(is the machine overloaded?): {str(exc.stdout or '')[-1000:]}"
            ) from None
        if out.returncode != 0:
            raise KafkaStartError(
                f"formatting node {self.node_id} in {self.data_dir} failed "
                f"(exit {out.returncode}):\n{(out.stdout + out.stderr)[-2000:]}"
            )

    def start(self) -> None:
        """Start the JVM (storage must be formatted); does not wait for readiness."""
        if self.running:
            return
        props = self.directory / "server.properties"
        env = dict(os.environ)
        self.proc = procs.spawn(self._java("kafka.Kafka", str(props)), self.log_path, env=env)

    @property
    def running(self) -> bool:
        """Whether the JVM process exists (it may be paused)."""
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout_s: float = 30.0) -> None:
        """Controlled shutdown (SIGTERM), escalating to SIGKILL after ``timeout_s``."""
        if self.proc is not None:
            procs.terminate(self.proc, timeout_s)

    def kill(self) -> None:
        """SIGKILL the broker, as a crash would."""
        if self.proc is not None:
            procs.signal_group(self.proc, signal.SIGKILL)
            self.proc.wait()

    def pause(self) -> None:
        """SIGSTOP the broker: it keeps its sockets but answers nothing."""
        if self.proc is not None:
            procs.pause(self.proc)

    def resume(self) -> None:
        """SIGCONT a paused broker."""
        if self.proc is not None:
            procs.resume(self.proc)


class KafkaCluster:
    """One or three local KRaft nodes under ``base_dir``; a context manager."""

    def __init__(self, base_dir: Path, size: int = 1, heap_mb: int = 512) -> None:
        if size not in (1, 3):
            raise ValueError(f"cluster size {size!r} is not supported; use 1 or 3 brokers")
        self.base_dir = base_dir
        flat = free_ports(2 * size)
        ports = list(zip(flat[::2], flat[1::2], strict=True))
        voters = ",".join(f"{i + 1}@127.0.0.1:{c}" for i, (_, c) in enumerate(ports))
        self.nodes = [
            KafkaNode(i + 1, base_dir / f"node-{i + 1}", p, c, voters, size, heap_mb)
            for i, (p, c) in enumerate(ports)
        ]

    @property
    def bootstrap(self) -> str:
        """Comma-separated client listeners of every node."""
        return ",".join(n.bootstrap for n in self.nodes)

    def start(self, timeout_s: float = 90.0) -> None:
        """Format (first time), start every node and wait until all brokers are registered."""
        cid = cluster_id(self.base_dir)
        for node in self.nodes:
            node.format(cid)
        for node in self.nodes:
            node.start()
        self.wait_ready(timeout_s)

    def wait_ready(self, timeout_s: float = 90.0) -> None:
        """Block until the admin client sees every node; raise with log tails if not."""
        admin = admin_client(self.bootstrap)

        @retry(
            stop=stop_after_delay(timeout_s),
            wait=wait_fixed(0.25),
            retry=retry_if_exception_type(Exception),
            reraise=True,
        )
        def check() -> None:
            for node in self.nodes:
                if node.proc is not None and node.proc.poll() is not None:
                    raise KafkaStartError(
                        f"node {node.node_id} exited with {node.proc.returncode}; "
                        f"log {node.log_path}:\n{_tail(node.log_path)}"
                    )
            meta = admin.list_topics(timeout=2)
            if len(meta.brokers) < len(self.nodes):
                raise TimeoutError(f"{len(meta.brokers)}/{len(self.nodes)} brokers registered")

        try:
            check()
        except KafkaStartError:
            raise
        except Exception as exc:
            tails = "\n".join(f"--- node {n.node_id}:\n{_tail(n.log_path)}" for n in self.nodes)
            raise KafkaStartError(
                f"Kafka at {self.bootstrap} not ready after {timeout_s:.0f}s ({exc})\n{tails}"
            ) from exc

    def create_topic(self, name: str, partitions: int, replication: int | None = None) -> None:
        """Create ``name`` (kept if it exists); replication defaults to the cluster size."""
        rf = replication if replication is not None else len(self.nodes)
        create_topic(self.bootstrap, name, partitions, rf)

    def stop(self, timeout_s: float = 20.0) -> None:
        """Stop every node: SIGTERM to all at once (a node stopped alone waits for a quorum
        that is leaving too), then SIGKILL whatever is left after ``timeout_s``.
        Keeps going past errors."""
        live = [n.proc for n in self.nodes if n.proc is not None and n.proc.poll() is None]
        for proc in live:
            procs.signal_group(proc, signal.SIGCONT)
            procs.signal_group(proc, signal.SIGTERM)
        for proc in live:
            try:
                procs.terminate(proc, timeout_s)
            except KeyboardInterrupt:
                raise
            except Exception as exc:  # teardown keeps going
                print(f"warning: stopping Kafka pid {proc.pid}: {exc}")

    def __enter__(self) -> KafkaCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
