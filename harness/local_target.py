"""The local backend: brokers as local processes, the pipeline as a local process group,
the store a SQLite file — and what the nemeses act on there."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.kafka_local import KafkaCluster
from harness.pipeline_proc import PipelineProcess
from harness.supervisor import Incarnation, SupervisedPipeline, Supervisor
from harness.topic import copy_sqlite_store


class LocalBackend:
    """Kafka (1 or 3 local brokers) and a SQLite store under the run's ``work/``."""

    name = "local"

    def __init__(self, brokers: int, work: Path, run_dir: Path) -> None:
        self.cluster = KafkaCluster(work / "kafka", size=brokers)
        self.run_dir = run_dir
        self.store = str(work / "store.db")

    @property
    def bootstrap(self) -> str:
        """The brokers' client listeners."""
        return self.cluster.bootstrap

    def start(self, topic: str, partitions: int) -> None:
        """Start the brokers and create the topic (replicated on every broker)."""
        self.cluster.start()
        self.cluster.create_topic(topic, partitions, len(self.cluster.nodes))

    def incarnations(
        self, topic: str, args: list[str], max_records: int, failpoint_file: Path
    ) -> Callable[[int], Incarnation]:
        """A factory of pipeline incarnations (local process groups)."""

        def make(n: int) -> Incarnation:
            return PipelineProcess(
                self.bootstrap,
                topic,
                self.store,
                self.run_dir / "logs" / f"pipeline-{n}.log",
                max_records_per_step=max_records,
                extra_args=tuple(args),
                failpoint_file=str(failpoint_file),
            )

        return make

    def target(self, supervisor: Supervisor) -> LocalTarget:
        """What the nemeses act on."""
        return LocalTarget(supervisor, self.cluster)

    def on_start(self, incarnation: Incarnation) -> None:
        """Nothing to redo when an incarnation starts locally."""

    def export_store(self) -> None:
        """Copy the SQLite store into the run directory."""
        if Path(self.store).exists():
            copy_sqlite_store(Path(self.store), self.run_dir / "persist" / "store.db")

    def stop(self) -> None:
        """Stop the brokers; keep their logs."""
        self.cluster.stop()
        for node in self.cluster.nodes:
            if node.log_path.exists():
                shutil.copy(node.log_path, self.run_dir / "logs" / f"kafka-{node.node_id}.log")


class LocalTarget(SupervisedPipeline):
    """:class:`nemeses.Target` over a :class:`Supervisor` and a :class:`KafkaCluster`.

    Must be driven from the runner's main thread: brokers restarted here are spawned by the
    calling thread, which has to outlive them (``PR_SET_PDEATHSIG``).
    """

    def __init__(self, supervisor: Supervisor, cluster: KafkaCluster) -> None:
        self.supervisor, self.cluster = supervisor, cluster
        self.brokers = len(cluster.nodes)
        self._paused: set[int] = set()

    def broker_kill(self, index: int) -> dict[str, Any]:
        """SIGKILL one broker."""
        node = self.cluster.nodes[index]
        pid = node.proc.pid if node.proc is not None and node.running else None
        node.kill()
        return {"broker": index, "killed": pid}

    def broker_start(self, index: int) -> dict[str, Any]:
        """Start one broker again and wait (up to 60 s) until the cluster sees it."""
        node = self.cluster.nodes[index]
        if node.running:
            return {"broker": index, "started": None}
        started = time.monotonic()
        node.start()
        self.cluster.wait_ready(60.0)
        pid = node.proc.pid if node.proc is not None else None
        return {"broker": index, "started": pid, "ready_s": round(time.monotonic() - started, 2)}

    def brokers_down(self) -> list[int]:
        """Brokers whose process is not running."""
        return [i for i, n in enumerate(self.cluster.nodes) if not n.running]

    def broker_pause(self, index: int) -> dict[str, Any]:
        """SIGSTOP one broker (waits until the kernel reports it stopped)."""
        node = self.cluster.nodes[index]
        node.pause()
        self._paused.add(index)
        return {"broker": index, "paused": node.proc.pid if node.proc else None}

    def broker_resume(self, index: int) -> dict[str, Any]:
        """SIGCONT one broker if it is frozen."""
        if index not in self._paused:
            return {"broker": index, "resumed": None}
        self._paused.discard(index)
        node = self.cluster.nodes[index]
        node.resume()
        return {"broker": index, "resumed": node.proc.pid if node.proc else None}

    def _containers_only(self, what: str) -> dict[str, Any]:
        raise NotImplementedError(
            f"{what} needs the containers backend; run with --backend containers"
        )

    def postgres_kill(self) -> dict[str, Any]:
        """Not available locally (the local store is a SQLite file)."""
        return self._containers_only("kill-postgres")

    def postgres_start(self) -> dict[str, Any]:
        """Nothing to start locally."""
        return {"started": None}

    def partition_start(self, kind: str, broker: int) -> dict[str, Any]:
        """Not available locally (local processes share the host's network namespace)."""
        return self._containers_only("partition")

    def partition_end(self, kind: str, broker: int) -> dict[str, Any]:
        """Not available locally."""
        return self._containers_only("partition")

    def heal_partitions(self) -> list[str]:
        """No partitions locally."""
        return []
