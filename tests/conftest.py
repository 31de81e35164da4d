"""Shared fixtures: real Kafka (local processes), real Spark, and the Docker engine."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")


@pytest.fixture(scope="session")
def kafka(sealcheck_kafka: Any) -> Any:
    """One local KRaft broker for the whole session (the plugin's ``sealcheck_kafka``)."""
    return sealcheck_kafka


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A local-mode Spark session with the Kafka connector. Its JVM starts in a temporary
    directory: a Spark driver makes ``artifacts/`` in its working directory, which would
    otherwise be the checkout."""
    from sealcheck.infra.jars import spark_connector_jars
    from sealcheck_upsert_source.spark import spark_session

    here = os.getcwd()
    os.chdir(tmp_path_factory.mktemp("spark-driver"))  # the JVM inherits it when launched
    try:
        session = spark_session([str(p) for p in spark_connector_jars()], "sealcheck-tests")
    finally:
        os.chdir(here)
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture(scope="session")
def docker_engine() -> None:
    """Skip (with the engine's own reason) when no Docker engine can be started here."""
    from sealcheck.infra.containers.images import EngineUnavailableError, ensure_engine

    try:
        ensure_engine()
    except EngineUnavailableError as exc:
        pytest.skip(f"no Docker engine: {exc}")


@pytest.fixture(scope="session")
def kafka_image(docker_engine: None) -> str:
    """The locally built Kafka image (built on first use)."""
    from sealcheck.infra.containers.images import kafka_image as build

    return build()


@pytest.fixture(scope="session")
def postgres_server(docker_engine: None, _sealcheck_postgres_server: Any) -> Any:
    """One PostgreSQL container for the session (each test makes its own database): the
    plugin's, which ``sealcheck_postgres`` hands out databases of."""
    return _sealcheck_postgres_server


@pytest.fixture(scope="session")
def spark_remote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of one Spark Connect server (local process) for the session: the harness's
    default way to run the pipeline, and 2 s per incarnation instead of a new JVM's 13 s."""
    from sealcheck.infra.local import LocalBackend
    from sealcheck.systems.upsert_source.spark_server import SparkServer

    where = tmp_path_factory.mktemp("spark-server")
    server = SparkServer(LocalBackend(1, where), where)
    server.ensure()
    try:
        yield server.url
    finally:
        server.stop()
