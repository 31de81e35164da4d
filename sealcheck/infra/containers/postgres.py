"""PostgreSQL in a container (the persist backend of the containers topology).

Started with testcontainers (Ryuk disabled: offline) from ``sealcheck-postgres``; the host
reaches it at its container IP over the bridge, like the brokers. :meth:`new_database`
gives every test (or run) a database of its own.
"""

from __future__ import annotations

import itertools
import re
import time
from typing import Any

import psycopg
from testcontainers.core.container import DockerContainer

from sealcheck.infra.containers.kafka import RUN_LABEL


class PostgresContainer:
    """One PostgreSQL server in a container; a context manager."""

    def __init__(
        self,
        image: str,
        run_id: str,
        network: Any = None,
        labels: dict[str, str] | None = None,
    ) -> None:
        where: dict[str, Any] = {}
        if network is not None:  # a testcontainers Network
            where = {"network": network, "network_aliases": ["postgres"]}
        self.container: Any = DockerContainer(
            image, labels={RUN_LABEL: run_id, **(labels or {})}, **where
        )
        self.host = ""
        self.run_id = run_id
        self._databases = itertools.count()

    def dsn(self, database: str = "postgres") -> str:
        """A libpq URI for ``database`` on this server (user postgres, trust auth)."""
        return f"postgresql://postgres@{self.host}:5432/{database}"

    def start(self, timeout_s: float = 60.0) -> None:
        """Start the container and wait until the server accepts connections."""
        self.container.start()
        self.start_wait(timeout_s)

    def start_wait(self, timeout_s: float = 60.0) -> None:
        """Wait until the (started) server accepts connections."""
        wrapped = self.container.get_wrapped_container()
        deadline = time.monotonic() + timeout_s
        last: Exception | None = None
        while time.monotonic() < deadline:
            wrapped.reload()
            if wrapped.status != "running":
                logs = wrapped.logs(tail=20).decode(errors="replace")
                raise RuntimeError(f"PostgreSQL container exited ({wrapped.status}):\n{logs}")
            nets = wrapped.attrs["NetworkSettings"]["Networks"]
            self.host = next((n["IPAddress"] for n in nets.values() if n["IPAddress"]), "")
            if self.host:
                try:
                    with psycopg.connect(self.dsn(), connect_timeout=2) as con:
                        con.execute("SELECT 1")
                    return
                except psycopg.OperationalError as exc:  # still starting
                    last = exc
            time.sleep(0.25)
        raise TimeoutError(f"PostgreSQL at {self.host or '?'} not ready: {last}")

    def new_database(self, prefix: str = "sealcheck") -> str:
        """Create an empty database; return its DSN."""
        tag = re.sub(r"[^a-z0-9_]", "_", self.run_id.lower())[:40]
        name = f"{prefix}_{tag}_{next(self._databases)}"
        with psycopg.connect(self.dsn(), autocommit=True) as con:
            con.execute(f'CREATE DATABASE "{name}"')
        return self.dsn(name)

    def stop(self) -> None:
        """Remove the container (forced) and its volumes; a no-op if never started."""
        if self.container.get_wrapped_container() is not None:
            self.container.stop(force=True, delete_volume=True)

    def __enter__(self) -> PostgresContainer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
