"""A Kafka broker in a container (a :class:`~sealcheck.infra.containers.service.ContainerService`).

The broker advertises its container IP, which the host reaches directly over the bridge,
so no port mapping is needed and the same image serves multi-broker networks.
"""

from __future__ import annotations

import base64
from typing import Any, ClassVar

from confluent_kafka.admin import AdminClient

from sealcheck.infra.containers.service import OWNER_LABEL, RUN_LABEL, ContainerService

__all__ = ["OWNER_LABEL", "RUN_LABEL", "KafkaContainer"]


class KafkaContainer(ContainerService):
    """One KRaft broker in a ``sealcheck-kafka`` container; a context manager."""

    what: ClassVar[str] = "Kafka"
    start_timeout_s: ClassVar[float] = 90.0

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
        super().__init__(image, run_id, network, (alias,) if alias else (), labels)
        cluster_id = base64.urlsafe_b64encode(run_id.encode().ljust(16, b"0")[:16]).decode()
        self.container.with_env("CLUSTER_ID", cluster_id.rstrip("="))
        self.container.with_env("HEAP_MB", str(heap_mb))
        self.container.with_env("NODE_ID", str(node_id))
        self.container.with_env("REPLICATION", str(replication))
        if voters is not None:
            self.container.with_env("VOTERS", voters)
        self.bootstrap = ""
        self._admin: tuple[str, Any] | None = None  # (bootstrap, its client)

    def started(self) -> None:
        """Its bootstrap address, once the container has an IP."""
        self.bootstrap = f"{self.ip()}:9092"

    def where(self) -> str:
        """Its bootstrap address."""
        return self.bootstrap or "?"

    def ready(self) -> bool:
        """Whether the broker answers metadata requests."""
        if self._admin is None or self._admin[0] != self.bootstrap:
            client = AdminClient({"bootstrap.servers": self.bootstrap, "log_level": 0})
            self._admin = (self.bootstrap, client)
        return bool(self._admin[1].list_topics(timeout=2).brokers)
