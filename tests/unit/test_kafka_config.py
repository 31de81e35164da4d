from pathlib import Path

import pytest

from sealcheck.infra.kafka_local import KafkaCluster, cluster_id


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
    first, second = cluster_id(tmp_path), cluster_id(tmp_path)
    assert first == second
    assert len(first) == 22
    assert cluster_id(tmp_path / "other") != first


def test_free_ports_are_distinct() -> None:
    from sealcheck.infra.kafka_local import free_ports

    ports = free_ports(64)
    assert len(set(ports)) == 64


def test_no_cluster_id_reads_as_a_command_line_option() -> None:
    # base64url digits include '-': about one data directory in 64 gave an id that
    # `kafka-storage format -t <id>` rejected as an option (seen in a soak run).
    ids = [cluster_id(Path(f"/tmp/sealcheck-run-{i}")) for i in range(2000)]
    assert not [i for i in ids if i.startswith("-")]
    assert all(len(i) == 22 for i in ids) and len(set(ids)) == len(ids)
    assert cluster_id(Path("/tmp/same")) == cluster_id(Path("/tmp/same"))  # deterministic
