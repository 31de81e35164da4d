"""The SQLite backend (the embedded default): WAL journal, ``synchronous=FULL``.

Schema (close to seed 001's ``(persisted_id, key, val, ts, diff)``)::

    updates(collection TEXT, key BLOB, val BLOB, ts INTEGER, diff INTEGER)
    frontiers(collection TEXT PRIMARY KEY, upper INTEGER, since INTEGER)
    holds(reader TEXT PRIMARY KEY, since INTEGER)     -- readers' read holds

Every write is one ``BEGIN IMMEDIATE`` transaction that first re-reads the upper, so two
processes on one file serialise and the second is fenced by :class:`UpperMismatch`.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Mapping, Sequence
from pathlib import Path

from tenacity import Retrying, retry_if_exception, stop_after_delay, wait_random

from sealcheck_upsert_source.failpoints import FAILPOINTS, failpoint
from sealcheck_upsert_source.persist.api import (
    Batch,
    ReadBelowSince,
    ReadNotSealed,
    Update,
    UpperMismatch,
    check_batch,
    check_consolidated,
)

SCHEMA = """
CREATE TABLE IF NOT EXISTS updates (
    collection TEXT NOT NULL, key BLOB NOT NULL, val BLOB NOT NULL,
    ts INTEGER NOT NULL, diff INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS updates_by_ts ON updates (collection, ts, key);
CREATE TABLE IF NOT EXISTS frontiers (
    collection TEXT PRIMARY KEY, upper INTEGER NOT NULL, since INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS holds (reader TEXT PRIMARY KEY, since INTEGER NOT NULL);
"""


def _busy(exc: BaseException) -> bool:
    return isinstance(exc, sqlite3.OperationalError) and exc.sqlite_errorcode in (
        sqlite3.SQLITE_BUSY,
        sqlite3.SQLITE_LOCKED,
    )


#: The keys with an update in ``[since, new since)`` of a collection: what a compaction merges.
#: A key merged before keeps its one update per value below the old since, untouched.
CHANGED = "SELECT key FROM updates WHERE collection = ? AND ts >= ? AND ts < ?"
#: Their updates below the new since, found in ``updates_by_ts`` alone: an index-only scan of
#: one entry per live key, no row read, cheaper than keeping an index by key up to date at
#: every append (which made appends ~50% slower, ``bench/store_bench.py``).
MERGED = f"SELECT rowid AS id FROM updates WHERE collection = ? AND ts < ? AND key IN ({CHANGED})"

#: A compaction's steps, all in one transaction: the rows to merge, their sums per
#: ``(key, value)`` (zeros dropped, no invariant checked: a violation stays for a read to
#: report), then — after the rows are deleted — the sums written back at ``since - 1``.
_MERGING = f"CREATE TEMP TABLE merging AS {MERGED}"
_SUMMED = (
    "CREATE TEMP TABLE summed AS SELECT key, val, SUM(diff) AS diff FROM updates "
    "WHERE rowid IN (SELECT id FROM temp.merging) GROUP BY key, val HAVING SUM(diff) <> 0"
)
_WRITE_BACK = (
    "INSERT INTO updates (collection, key, val, ts, diff) "
    "SELECT ?, key, val, ?, diff FROM temp.summed"
)

#: Auxiliary threads SQLite's sorter may use beside the caller's (one per core, up to 4).
SORT_THREADS = max(1, min(4, os.cpu_count() or 1))

_retry_busy = Retrying(
    retry=retry_if_exception(_busy),
    stop=stop_after_delay(60),
    wait=wait_random(0.01, 0.1),
    reraise=True,
)


class SqlitePersist:
    """A :class:`~sealcheck_upsert_source.persist.api.Persist` on one SQLite file."""

    def __init__(self, path: Path, durable: bool = True) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._db = sqlite3.connect(path, isolation_level=None, timeout=60.0)
        # FULL: a commit returns once the WAL is fsynced; OFF is the non-durable-commits bug
        self._db.execute(f"PRAGMA synchronous={'FULL' if durable else 'OFF'}")
        # helper threads for SQLite's sorter: a rehydration's GROUP BY over millions of rows
        # is a sort (~20% faster with 2 threads at 1M keys, ``bench/store_bench.py``)
        self._db.execute(f"PRAGMA threads={SORT_THREADS}")
        _retry_busy(self._init_file)

    def _init_file(self) -> None:
        # Switching to WAL needs an exclusive lock and does not wait on the busy handler, so
        # two processes opening a new store at once can see SQLITE_BUSY: retried.
        if self._db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            self._db.execute("PRAGMA journal_mode=WAL")
        self._db.executescript(SCHEMA)

    # -- frontiers -------------------------------------------------------------------
    def _frontier(self, collection: str) -> tuple[int, int]:
        row = self._db.execute(
            "SELECT upper, since FROM frontiers WHERE collection = ?", (collection,)
        ).fetchone()
        return (int(row[0]), int(row[1])) if row else (0, 0)

    def uppers(self) -> dict[str, int]:
        """Every collection's upper."""
        return {c: int(u) for c, u in self._db.execute("SELECT collection, upper FROM frontiers")}

    def sinces(self) -> dict[str, int]:
        """Every collection's compaction frontier."""
        return {c: int(s) for c, s in self._db.execute("SELECT collection, since FROM frontiers")}

    def holds(self) -> dict[str, int]:
        """Every reader's read hold."""
        return {r: int(s) for r, s in self._db.execute("SELECT reader, since FROM holds")}

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
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            for name, batch in batches.items():
                upper, since = self._frontier(name)
                if upper != batch.expected_upper:
                    raise UpperMismatch(name, batch.expected_upper, upper)
                rows = [(name, *u) for u in batch.updates]
                half = len(rows) // 2
                insert = "INSERT INTO updates (collection, key, val, ts, diff) VALUES (?,?,?,?,?)"
                db.executemany(insert, rows[:half])
                if f"{name}.mid_append" in FAILPOINTS:
                    failpoint(f"{name}.mid_append")
                db.executemany(insert, rows[half:])
                db.execute(
                    "INSERT INTO frontiers (collection, upper, since) VALUES (?, ?, ?) "
                    "ON CONFLICT (collection) DO UPDATE SET upper = excluded.upper",
                    (name, batch.new_upper, since),
                )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def compact(self, collection: str, since: int) -> bool:
        """Merge the updates below ``since`` of every key changed since the last compaction
        into one update per ``(key, value)`` at ``since - 1`` (see
        :meth:`~sealcheck_upsert_source.persist.api.Persist.compact`); ``since`` must be < upper.
        """
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            upper, current = self._frontier(collection)
            if since <= current:
                db.execute("ROLLBACK")
                return False
            if since >= upper:
                raise ValueError(
                    f"collection {collection!r}: cannot compact to since {since} at or past its "
                    f"upper {upper}; the latest sealed state (ts {upper - 1}) must stay readable"
                )
            # summed, deleted and written back inside SQLite: no row crosses into Python
            # (at 1M keys a compaction every 2 random steps of 100,000: 8.3-8.8 s -> 5.3-6.2 s
            # against summing the deleted rows in Python, bench/store_bench.py)
            db.execute(_MERGING, (collection, since, collection, current, since))
            db.execute(_SUMMED)
            db.execute("DELETE FROM updates WHERE rowid IN (SELECT id FROM temp.merging)")
            failpoint("compact.mid")
            db.execute(_WRITE_BACK, (collection, since - 1))
            db.execute("DROP TABLE temp.merging")
            db.execute("DROP TABLE temp.summed")
            db.execute("UPDATE frontiers SET since = ? WHERE collection = ?", (since, collection))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return True

    # -- reads -----------------------------------------------------------------------
    def snapshot(self, collection: str, as_of: int) -> dict[bytes, bytes]:
        """Consolidated key → value at ``as_of``, with both invariants checked."""
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
            "SELECT key, val, SUM(diff) FROM updates WHERE collection = ? AND ts <= ? "
            "GROUP BY key, val HAVING SUM(diff) <> 0",
            (collection, as_of),
        )
        return check_consolidated(
            collection, ((bytes(k), bytes(v), int(d)) for k, v, d in rows), as_of
        )

    def updates(self, collection: str, lo: int, hi: int) -> list[Update]:
        """Raw updates with ``lo <= ts < hi`` in ``(ts, key, value)`` order."""
        rows = self._db.execute(
            "SELECT key, val, ts, diff FROM updates WHERE collection = ? AND ts >= ? AND ts < ? "
            "ORDER BY ts, key, val",
            (collection, lo, hi),
        )
        return [Update(bytes(k), bytes(v), int(t), int(d)) for k, v, t, d in rows]

    def close(self) -> None:
        """Close the connection."""
        self._db.close()
