"""What the nemeses act on in a local run: the supervised pipeline and the local brokers."""

from __future__ import annotations

import time
from typing import Any

from harness.kafka_local import KafkaCluster
from harness.supervisor import Supervisor


class LocalTarget:
    """:class:`nemeses.Target` over a :class:`Supervisor` and a :class:`KafkaCluster`.

    Must be driven from the runner's main thread: brokers restarted here are spawned by the
    calling thread, which has to outlive them (``PR_SET_PDEATHSIG``).
    """

    def __init__(self, supervisor: Supervisor, cluster: KafkaCluster) -> None:
        self.supervisor, self.cluster = supervisor, cluster
        self.brokers = len(cluster.nodes)

    def pipeline_kill(self) -> dict[str, Any]:
        """SIGKILL the pipeline incarnation."""
        return self.supervisor.kill()

    def pipeline_pause(self) -> dict[str, Any]:
        """SIGSTOP the pipeline incarnation."""
        return self.supervisor.pause()

    def pipeline_resume(self) -> dict[str, Any]:
        """SIGCONT the pipeline incarnation."""
        return self.supervisor.resume()

    def arm_failpoint(self, spec: str) -> dict[str, Any]:
        """Arm a failpoint in the running pipeline."""
        return self.supervisor.arm_failpoint(spec)

    def disarm_failpoints(self) -> bool:
        """Disarm failpoints that have not fired."""
        return self.supervisor.disarm_failpoints()

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
