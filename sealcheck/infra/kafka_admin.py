"""Topic administration shared by the local and containerised backends."""

from __future__ import annotations

import time

from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic


def admin_client(bootstrap: str) -> AdminClient:
    """An admin client that stays quiet while brokers are (re)starting."""
    return AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})


def create_topic(bootstrap: str, name: str, partitions: int, replication: int) -> None:
    """Create ``name`` (an existing topic is kept) and wait until every partition has a leader."""
    admin = admin_client(bootstrap)
    if name not in admin.list_topics(timeout=10).topics:
        futures = admin.create_topics(
            [NewTopic(name, partitions, replication)], operation_timeout=30
        )
        futures[name].result(timeout=60)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        topic = admin.list_topics(topic=name, timeout=5).topics.get(name)
        if (
            topic is not None
            and topic.error is None
            and len(topic.partitions) == partitions
            and all(p.leader >= 0 for p in topic.partitions.values())
        ):
            return
        time.sleep(0.1)
    raise TimeoutError(f"topic {name!r} at {bootstrap} has no leader for every partition after 30s")
