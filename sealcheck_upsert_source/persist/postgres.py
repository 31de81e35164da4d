"""The PostgreSQL backend (for the containers topology): the same schema and contract as
SQLite, on ``psycopg`` 3.

Compare-and-append locks the collection's frontier row (``SELECT … FOR UPDATE``) before
re-reading the upper, so two writers serialise on the row and the second one sees the first
one's new upper and is fenced with :class:`UpperMismatch`. Every write is one transaction
(``synchronous_commit`` stays on: a commit is durable when it returns).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from typing import Any

import psycopg

from sealcheck_upsert_source.failpoints import FAILPOINTS, failpoint
from sealcheck_upsert_source.persist.api import (
    Batch,
    ReadBelowSince,
    ReadNotSealed,
    StoreUnavailable,
    Update,
    UpperMismatch,
    check_batch,
    check_consolidated,
    merged,
)

SCHEMA = """
CREATE TABLE IF NOT EXISTS updates (
    collection TEXT NOT NULL, key BYTEA NOT NULL, val BYTEA NOT NULL,
    ts BIGINT NOT NULL, diff BIGINT NOT NULL);
CREATE INDEX IF NOT EXISTS updates_by_ts ON updates (collection, ts);
CREATE TABLE IF NOT EXISTS frontiers (
    collection TEXT PRIMARY KEY, upper BIGINT NOT NULL, since BIGINT NOT NULL);
CREATE TABLE IF NOT EXISTS holds (reader TEXT PRIMARY KEY, since BIGINT NOT NULL);
"""


class PostgresPersist:
    """A :class:`~sealcheck_upsert_source.persist.api.Persist` in one PostgreSQL database."""

    def __init__(self, dsn: str, connect_timeout_s: int = 10, durable: bool = True) -> None:
        self.dsn, self._timeout_s, self._durable = dsn, connect_timeout_s, durable
        self._db = self._connect()
        with self._db.transaction():
            # Creating the schema concurrently races on the catalog; serialise it.
            self._db.execute("SELECT pg_advisory_xact_lock(5347)")
            self._db.execute(SCHEMA)

    def _connect(self) -> psycopg.Connection[Any]:
        # A reply that never comes (a dead server, a cut network) must end in an error, not a
        # wait for ever: unacknowledged data times out after 5 s, an idle link is probed.
        db = psycopg.connect(
            self.dsn,
            autocommit=True,
            connect_timeout=self._timeout_s,
            tcp_user_timeout=5_000,
            keepalives=1,
            keepalives_idle=5,
            keepalives_interval=2,
            keepalives_count=3,
        )
        if not self._durable:  # the non-durable-commits bug: commits return before the WAL flush
            db.execute("SET synchronous_commit = off")
        return db

    def reconnect(self, within_s: float = 30.0) -> None:
        """A new connection in place of a broken one, trying for up to ``within_s`` seconds as
        a retrying client would (used only by a deliberately broken variant that retries
        writes whose outcome it does not know; a lost reply's blackout lasts 10 s)."""
        from tenacity import Retrying, retry_if_exception_type, stop_after_delay, wait_fixed

        with contextlib.suppress(Exception):
            self._db.close()
        for attempt in Retrying(
            retry=retry_if_exception_type(psycopg.OperationalError),
            stop=stop_after_delay(within_s),
            wait=wait_fixed(1.0),
            reraise=True,
        ):
            with attempt:
                self._db = self._connect()

    # -- frontiers -------------------------------------------------------------------
    def _frontier(self, collection: str, lock: bool = False) -> tuple[int, int]:
        if lock:
            self._db.execute(
                "INSERT INTO frontiers (collection, upper, since) VALUES (%s, 0, 0) "
                "ON CONFLICT (collection) DO NOTHING",
                (collection,),
            )
        row = self._db.execute(
            "SELECT upper, since FROM frontiers WHERE collection = %s"
            + (" FOR UPDATE" if lock else ""),
            (collection,),
        ).fetchone()
        return (int(row[0]), int(row[1])) if row else (0, 0)

    def uppers(self) -> dict[str, int]:
        """Every collection's upper."""
        rows = self._db.execute("SELECT collection, upper FROM frontiers WHERE upper > 0")
        return {str(c): int(u) for c, u in rows}

    def sinces(self) -> dict[str, int]:
        """Every collection's compaction frontier."""
        rows = self._db.execute("SELECT collection, since FROM frontiers WHERE upper > 0")
        return {str(c): int(s) for c, s in rows}

    def holds(self) -> dict[str, int]:
        """Every reader's read hold."""
        return {str(r): int(s) for r, s in self._db.execute("SELECT reader, since FROM holds")}

    # -- writes ----------------------------------------------------------------------
    def compare_and_append(
        self, collection: str, updates: Sequence[Update], expected_upper: int, new_upper: int
    ) -> None:
        """Append ``updates`` and seal to ``new_upper`` iff the upper is ``expected_upper``."""
        self.compare_and_append_many({collection: Batch(updates, expected_upper, new_upper)})

    def compare_and_append_many(self, batches: Mapping[str, Batch]) -> None:
        """Several collections' compare-and-appends in one transaction (all or nothing)."""
        for name, batch in batches.items():
            check_batch(name, batch)
        try:
            self._append_many(batches)
        except psycopg.OperationalError as exc:
            raise StoreUnavailable(
                f"the outcome of a write to {sorted(batches)} is unknown: {exc}"
            ) from exc

    def _append_many(self, batches: Mapping[str, Batch]) -> None:
        db = self._db
        with db.transaction():
            for name in sorted(batches):  # one lock order: no deadlock between two writers
                batch = batches[name]
                upper, _ = self._frontier(name, lock=True)
                if upper != batch.expected_upper:
                    raise UpperMismatch(name, batch.expected_upper, upper)
                rows = [(name, *u) for u in batch.updates]
                half = len(rows) // 2
                insert = (
                    "INSERT INTO updates (collection, key, val, ts, diff) VALUES (%s,%s,%s,%s,%s)"
                )
                with db.cursor() as cur:
                    cur.executemany(insert, rows[:half])
                    if f"{name}.mid_append" in FAILPOINTS:
                        failpoint(f"{name}.mid_append")
                    cur.executemany(insert, rows[half:])
                db.execute(
                    "UPDATE frontiers SET upper = %s WHERE collection = %s",
                    (batch.new_upper, name),
                )

    def compact(self, collection: str, since: int) -> bool:
        """Merge the updates below ``since`` of every key changed since the last compaction
        into one per ``(key, value)`` at ``since - 1`` (see
        :meth:`~sealcheck_upsert_source.persist.api.Persist.compact`); ``since`` must be < upper.
        """
        db = self._db
        with db.transaction():
            upper, current = self._frontier(collection, lock=True)
            if since <= current:
                return False
            if since >= upper:
                raise ValueError(
                    f"collection {collection!r}: cannot compact to since {since} at or past its "
                    f"upper {upper}; the latest sealed state (ts {upper - 1}) must stay readable"
                )
            changed = "SELECT key FROM updates WHERE collection = %s AND ts >= %s AND ts < %s"
            deleted = db.execute(  # one scan: the rows go and come back summed
                f"DELETE FROM updates WHERE collection = %s AND ts < %s AND key IN ({changed}) "
                "RETURNING key, val, diff",
                (collection, since, collection, current, since),
            ).fetchall()
            failpoint("compact.mid")
            with db.cursor() as cur:
                cur.executemany(
                    "INSERT INTO updates (collection, key, val, ts, diff) "
                    "VALUES (%s, %s, %s, %s, %s)",
                    [(collection, k, v, since - 1, d) for k, v, d in merged(deleted)],
                )
            db.execute("UPDATE frontiers SET since = %s WHERE collection = %s", (since, collection))
        return True

    # -- reads -----------------------------------------------------------------------
    def snapshot(self, collection: str, as_of: int) -> dict[bytes, bytes]:
        """Consolidated key → value at ``as_of``, with both invariants checked."""
        with self._db.transaction():  # one consistent view: frontier and rows together
            self._db.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            upper, since = self._frontier(collection)
            if as_of >= upper:
                raise ReadNotSealed(
                    f"collection {collection!r}: as_of {as_of} is not sealed (upper {upper})"
                )
            if as_of < since:
                raise ReadBelowSince(
                    f"collection {collection!r}: as_of {as_of} is below its since {since}"
                )
            rows = self._db.execute(
                "SELECT key, val, SUM(diff) FROM updates WHERE collection = %s AND ts <= %s "
                "GROUP BY key, val HAVING SUM(diff) <> 0",
                (collection, as_of),
            ).fetchall()
        return check_consolidated(
            collection, ((bytes(k), bytes(v), int(d)) for k, v, d in rows), as_of
        )

    def updates(self, collection: str, lo: int, hi: int) -> list[Update]:
        """Raw updates with ``lo <= ts < hi`` in ``(ts, key, value)`` order."""
        rows = self._db.execute(
            "SELECT key, val, ts, diff FROM updates WHERE collection = %s AND ts >= %s "
            "AND ts < %s ORDER BY ts, key, val",
            (collection, lo, hi),
        )
        return [Update(bytes(k), bytes(v), int(t), int(d)) for k, v, t, d in rows]

    def close(self) -> None:
        """Close the connection."""
        self._db.close()
