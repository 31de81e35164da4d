"""A Kafka broker in a container, started with testcontainers (Ryuk disabled: offline).

The broker advertises its container IP, which the host reaches directly over the bridge,
so no port mapping is needed and the same image serves multi-broker networks.
"""

from __future__ import annotations

import base64
import os
import time
from typing import Any

from confluent_kafka.admin import AdminClient

os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")

from testcontainers.core.config import testcontainers_config
from testcontainers.core.container import DockerContainer

testcontainers_config.ryuk_disabled = True

#: Label put on every container Sealcheck starts; its value is the run id.
RUN_LABEL = "dev.sealcheck.run"
#: Label with the ``<pid>:<start time>`` of the harness that owns the container (cleanup).
OWNER_LABEL = "dev.sealcheck.owner"


class KafkaContainer:
    """One KRaft broker in a ``sealcheck-kafka`` container; a context manager."""

    def __init__(
        self,
        image: str,
        run_id: str,
        heap_mb: int = 512,
        node_id: int = 1,
        voters: str | None = None,
        replication: int = 1,
        network: Any = None,
        alias: str | None = None,
        labels: dict[str, str] | None = None,
    ) -> None:
        cluster_id = base64.urlsafe_b64encode(run_id.encode().ljust(16, b"0")[:16]).decode()
        where: dict[str, Any] = {}
        if network is not None:  # a testcontainers Network; the alias is the broker's DNS name
            where = {"network": network, "network_aliases": [alias] if alias else None}
        self.container: Any = (
            DockerContainer(image, labels={RUN_LABEL: run_id, **(labels or {})}, **where)
            .with_env("CLUSTER_ID", cluster_id.rstrip("="))
            .with_env("HEAP_MB", str(heap_mb))
            .with_env("NODE_ID", str(node_id))
            .with_env("REPLICATION", str(replication))
        )
        if voters is not None:
            self.container.with_env("VOTERS", voters)
        self.network = network
        self.bootstrap = ""

    @property
    def wrapped(self) -> Any:
        """The docker SDK container (None before start)."""
        return self.container.get_wrapped_container()

    def ip(self) -> str:
        """The container's IP on its network (re-read: a restart may change it)."""
        self.wrapped.reload()
        nets = self.wrapped.attrs["NetworkSettings"]["Networks"]
        return next((n["IPAddress"] for n in nets.values() if n["IPAddress"]), "")

    def start(self, timeout_s: float = 90.0, wait: bool = True) -> None:
        """Start the container and (``wait``) until the broker answers metadata requests."""
        self.container.start()
        self.bootstrap = f"{self.ip()}:9092"
        if wait:
            self.wait_ready(timeout_s)

    def wait_ready(self, timeout_s: float = 90.0) -> None:
        """Wait until the broker answers metadata requests."""
        wrapped = self.wrapped
        admin = AdminClient({"bootstrap.servers": self.bootstrap, "log_level": 0})
        deadline = time.monotonic() + timeout_s
        last: Exception | None = None
        while time.monotonic() < deadline:
            wrapped.reload()
            if wrapped.status != "running":
                logs = wrapped.logs(tail=20).decode(errors="replace")
                raise RuntimeError(f"Kafka container exited ({wrapped.status}):\n{logs}")
            try:
                if admin.list_topics(timeout=2).brokers:
                    return
            except Exception as exc:  # broker still starting
                last = exc
            time.sleep(0.25)
        raise TimeoutError(f"Kafka container at {self.bootstrap} not ready: {last}")

    def stop(self) -> None:
        """Remove the container (forced) and its anonymous volumes; a no-op if never started."""
        if self.container.get_wrapped_container() is not None:
            self.container.stop(force=True, delete_volume=True)

    def __enter__(self) -> KafkaContainer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
