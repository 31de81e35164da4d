"""PostgreSQL in a container (a :class:`~sealcheck.infra.containers.service.ContainerService`,
the persist backend of the containers topology).

Started from ``sealcheck-postgres``; the host reaches it at its container IP over the bridge,
like the brokers. :meth:`PostgresContainer.new_database` gives every test (or run) a database
of its own.
"""

from __future__ import annotations

import itertools
import re
from typing import Any, ClassVar

import psycopg

from sealcheck.infra.containers.service import ContainerService


class PostgresContainer(ContainerService):
    """One PostgreSQL server in a container; a context manager."""

    what: ClassVar[str] = "PostgreSQL"
    start_timeout_s: ClassVar[float] = 60.0

    def __init__(
        self,
        image: str,
        run_id: str,
        network: Any = None,
        labels: dict[str, str] | None = None,
    ) -> None:
        super().__init__(image, run_id, network, ("postgres",), labels)
        self.host = ""
        self._databases = itertools.count()

    def dsn(self, database: str = "postgres") -> str:
        """A libpq URI for ``database`` on this server (user postgres, trust auth)."""
        return f"postgresql://postgres@{self.host}:5432/{database}"

    def start_wait(self, timeout_s: float | None = None) -> None:
        """Wait until the (started, or restarted) server accepts connections."""
        self.wait_ready(timeout_s)

    def where(self) -> str:
        """Its address."""
        return self.host or "?"

    def ready(self) -> bool:
        """Whether the server accepts connections (at its address now: a restart may move
        it)."""
        self.host = self.ip()
        if not self.host:
            return False
        with psycopg.connect(self.dsn(), connect_timeout=2) as con:
            con.execute("SELECT 1")
        return True

    def new_database(self, prefix: str = "sealcheck") -> str:
        """Create an empty database; return its DSN."""
        tag = re.sub(r"[^a-z0-9_]", "_", self.run_id.lower())[:40]
        name = f"{prefix}_{tag}_{next(self._databases)}"
        with psycopg.connect(self.dsn(), autocommit=True) as con:
            con.execute(f'CREATE DATABASE "{name}"')
        return self.dsn(name)
