from pathlib import Path

import pytest

from harness.kafka_local import KafkaCluster, _cluster_id


def _props(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if line)


def test_single_node_is_rf1_isr1(tmp_path: Path) -> None:
    cluster = KafkaCluster(tmp_path, size=1)
    props = _props(cluster.nodes[0]._properties())
    assert props["process.roles"] == "broker,controller"
    assert props["min.insync.replicas"] == "1"
    assert props["default.replication.factor"] == "1"
    assert props["listeners"].startswith("PLAINTEXT://127.0.0.1:")
    assert props["auto.create.topics.enable"] == "false"


def test_three_nodes_share_voters_on_distinct_ports(tmp_path: Path) -> None:
    cluster = KafkaCluster(tmp_path, size=3)
    props = [_props(n._properties()) for n in cluster.nodes]
    assert len({p["controller.quorum.voters"] for p in props}) == 1
    assert props[0]["controller.quorum.voters"].count("@127.0.0.1:") == 3
    ports = [n.port for n in cluster.nodes] + [n.controller_port for n in cluster.nodes]
    assert len(set(ports)) == 6
    assert all(p["min.insync.replicas"] == "2" for p in props)
    assert all(p["default.replication.factor"] == "3" for p in props)
    assert cluster.bootstrap.count(",") == 2


def test_unsupported_size_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cluster size 2"):
        KafkaCluster(tmp_path, size=2)


def test_cluster_id_is_stable_and_valid(tmp_path: Path) -> None:
    first, second = _cluster_id(tmp_path), _cluster_id(tmp_path)
    assert first == second
    assert len(first) == 22
    assert _cluster_id(tmp_path / "other") != first


def test_free_ports_are_distinct() -> None:
    from harness.kafka_local import free_ports

    ports = free_ports(64)
    assert len(set(ports)) == 64
