"""A job's output in PostgreSQL tables that keep no bindings, observed from outside: the same
snapshots as :class:`~sealcheck.systems.outputs.sql.SQLiteOutput`
(:mod:`sealcheck.systems.outputs.sql`), read over a connection of the harness's own::

    PostgresOutput("postgresql://sealcheck@127.0.0.1:5432/jobs", data="accounts", key="id",
                   errors="dead_letters", exclude=("batch_id", "updated_at"))

Something was committed when the server's WAL position moved (``pg_current_wal_lsn()``, four
times a second); then every table is read in one ``REPEATABLE READ READ ONLY`` transaction —
one consistent state of all of them. A table may be named ``schema.table``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import dict_row

from sealcheck.systems.outputs.sql import COLLECTIONS, Snapshots, SnapshotStates


def read_options(dsn: str) -> str:
    """The server options of the harness's reads: the connection string's own (a
    ``search_path`` that names the job's schema, say) and a statement timeout."""
    given = str(psycopg.conninfo.conninfo_to_dict(dsn).get("options") or "")
    return f"{given} -c statement_timeout=5000".strip()


@dataclass(frozen=True)
class PostgresOutput(Snapshots):
    """A job's tables in one PostgreSQL database, snapshotted by the harness."""

    #: how the harness connects (a libpq connection string or URL); it only reads
    dsn: str
    #: the upserted table
    data: str
    #: its key column, or columns (a composite key)
    key: str | tuple[str, ...] = "key"
    #: the dead-letter table, if the job has one (None: ``errors`` stays empty)
    errors: str | None = None
    #: the dead-letter table's key column(s) (None: ``key``)
    errors_key: str | tuple[str, ...] | None = None
    #: a column holding the row's value as it is (None: the other columns, as JSON)
    value: str | None = None
    #: columns of run metadata, never compared (a batch id, a load time)
    exclude: tuple[str, ...] = ()
    #: how long the tables must stay unchanged, with the job running, for the harness to
    #: call the job caught up (:meth:`sealcheck.systems.api.Progress.settled`)
    settle_s: float = 30.0
    #: the job commits one batch in several transactions: take states only between batches
    #: (the job's declared windows tell when a batch is in flight)
    between_batches: bool = False
    _states: SnapshotStates = field(
        default_factory=SnapshotStates, init=False, repr=False, compare=False
    )

    errors_of_reading = (psycopg.Error,)

    def where(self) -> str:
        """The server and database (no password)."""
        info = psycopg.conninfo.conninfo_to_dict(self.dsn)
        return (
            f"postgresql://{info.get('host', '')}:{info.get('port', '')}/{info.get('dbname', '')}"
        )

    def _connect(self) -> psycopg.Connection[dict[str, Any]]:
        # a read blocked by a lock or a lost server gives up rather than hold the run
        return psycopg.connect(
            self.dsn, autocommit=True, row_factory=dict_row, connect_timeout=2,
            options=read_options(self.dsn), keepalives_idle=5,
        )  # fmt: skip

    def _version(self, conn: psycopg.Connection[dict[str, Any]]) -> Any:
        row = conn.execute("SELECT pg_current_wal_lsn()::text AS lsn").fetchone()
        return row["lsn"] if row else None

    def _read(self, conn: psycopg.Connection[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
        out: dict[str, list[dict[str, Any]]] = {c: [] for c in COLLECTIONS}
        with conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            for name, (table, _) in self.tables().items():
                query = sql.SQL("SELECT * FROM {}").format(sql.Identifier(*table.split(".")))
                out[name] = conn.execute(query).fetchall()
        return out
