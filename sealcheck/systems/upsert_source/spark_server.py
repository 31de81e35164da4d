"""The pipeline's Spark Connect server: one long-lived Spark driver per run that every pipeline
incarnation connects to (``--spark-remote``), so a killed incarnation is back to sealing steps
in about 2 s instead of 13 (a new JVM and a cold first query; measured in
``bench/recovery_bench.py``, numbers in ``docs/architecture.md``).

The server is the PySpark distribution's own (``SparkConnectServer`` through ``spark-submit``)
with the Kafka connector's jars on its classpath: locally a process on a free loopback port, in
containers the pipeline image with another entrypoint, reached by name on the run's network. A
server that died (a nemesis, an OOM) is started again before the next incarnation starts.
"""

from __future__ import annotations

from pathlib import Path

from sealcheck.core.nodes import Incarnation, Launch
from sealcheck.infra.jars import jars_dir, pom_property
from sealcheck.infra.kafka_local import free_ports
from sealcheck.infra.logwait import wait_log
from sealcheck.infra.node import Backend
from sealcheck.systems.spark_image import SPARK_SUBMIT_IN_IMAGE
from sealcheck.systems.upsert_source.image import JARS_IN_IMAGE, upsert_source_image
from sealcheck_upsert_source.spark import CONNECT_READY, connect_server_command

#: The port the server listens on inside its container.
CONTAINER_PORT = 15002


class SparkServer:
    """A Spark Connect server on ``backend`` (start, wait until it serves, keep it running)."""

    def __init__(
        self,
        backend: Backend,
        logs: Path,
        timeout_s: float = 180.0,
        master: str | None = None,
        executors: int = 2,
    ) -> None:
        self.backend, self.timeout_s = backend, timeout_s
        self.log_path = logs / "spark-server.log"
        port = CONTAINER_PORT if backend.runs_images else free_ports(1)[0]
        host_jars = str(jars_dir() / f"spark-kafka-{pom_property('spark.version')}")
        cores = executors if master else 2  # executors of one core each, or local[2]
        self.launch = Launch(
            program=tuple(connect_server_command(host_jars, port, cores=cores, master=master)),
            args=(),
            local_env={"SPARK_LOCAL_IP": "127.0.0.1"},
            image=upsert_source_image,
            entrypoint=tuple(
                connect_server_command(
                    JARS_IN_IMAGE,
                    port,
                    host="0.0.0.0",
                    spark_submit=SPARK_SUBMIT_IN_IMAGE,
                    cores=cores,
                    master=master,
                    driver_host=backend.address("spark") if master else None,
                )
            ),
        )
        self.url = f"sc://{backend.address('spark')}:{port}"
        self.node: Incarnation | None = None
        self.starts = 0

    def ensure(self) -> None:
        """Start the server if it does not run (a new process or container), and wait until
        it accepts clients."""
        if self.node is not None and self.node.alive:
            return
        if self.node is not None:
            self.node.stop(5)  # a dead container is removed before its name is reused
        self.node = node = self.backend.service(self.launch, "spark", self.log_path)
        seen = len(node.log_text())  # a local log is appended to: look past earlier starts
        node.start()
        self.starts += 1
        wait_log(node, CONNECT_READY, self.timeout_s, seen, what="the Spark Connect server")

    def stop(self) -> None:
        """Stop the server."""
        if self.node is not None:
            self.node.stop(20)
