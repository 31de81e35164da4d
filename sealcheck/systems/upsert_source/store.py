"""Reading the pipeline's persist store from outside: its uppers, how far it has sealed, and
its export into the checkers' format — for both backends (a SQLite file locally, a PostgreSQL
database in containers), straight from the tables, so nothing here trusts the pipeline's own
read path. The tables (``sealcheck_upsert_source/persist``; ``docs/formats.md``, "Persisted
formats"):

    updates(collection, key, val, ts, diff)      frontiers(collection, upper, since)
    holds(reader, since)

The one write is the harness's read hold (:func:`hold_captured`): the pipeline's compaction
merges no step the harness has not captured yet (as far as its ``--hold-steps`` allows).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sealcheck.rundir.captures import Capture, plan
from sealcheck.rundir.files import write_export
from sealcheck.rundir.names import EXPORT_DIR
from sealcheck.systems.api import Progress

_UPPERS = "SELECT collection, upper FROM frontiers"
_BOUND = (
    "SELECT key, val FROM updates WHERE collection = 'bindings' AND ts < {p} "
    "GROUP BY key, val HAVING SUM(diff) > 0"
)
_FRONTIERS = "SELECT collection, upper, since FROM frontiers"
_ALL = "SELECT collection, key, val, ts, diff FROM updates"
_HOLD = (
    "INSERT INTO holds (reader, since) VALUES ({p}, {p}) "
    "ON CONFLICT (reader) DO UPDATE SET since = {max}(holds.since, excluded.since)"
)
#: the pipeline's collections: a compaction moves all of their sinces together
COLLECTIONS = ("bindings", "data", "errors")
#: the name of the harness's read hold
READER = "sealcheck-observer"
_STEPS = (
    "SELECT collection, key, val, ts, diff FROM updates "
    "WHERE collection = {p} AND ts >= {p} AND ts < {p} ORDER BY ts"
)


def _postgres(location: str) -> bool:
    return location.startswith(("postgresql://", "postgres://"))


def _sqlite_path(location: str) -> Path:
    return Path(location.removeprefix("sqlite://"))


Fetch = Callable[[str, Sequence[Any]], list[tuple[Any, ...]]]


@contextmanager
def _snapshot(location: str) -> Iterator[Fetch]:
    """``fetch(sql, params)`` for read-only queries that all see one snapshot of the store
    (PostgreSQL: a REPEATABLE READ read-only transaction; SQLite: one deferred transaction
    under WAL). Raises when the store cannot be reached."""
    if _postgres(location):
        import psycopg

        with psycopg.connect(location, connect_timeout=2) as pg:
            pg.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
            pg.read_only = True
            yield lambda sql, params: list(pg.execute(sql.format(p="%s"), params).fetchall())
        return
    uri = f"file:{_sqlite_path(location)}?mode=ro"
    con = sqlite3.connect(uri, uri=True, timeout=1.0, isolation_level=None)
    try:
        con.execute("BEGIN")
        yield lambda sql, params: list(con.execute(sql.format(p="?"), params).fetchall())
    finally:
        con.close()


def _query(location: str, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    """Rows of one read-only query (raises when the store cannot be reached)."""
    with _snapshot(location) as fetch:
        return fetch(sql, params)


def _exists(location: str) -> bool:
    return _postgres(location) or _sqlite_path(location).exists()


def read_uppers(location: str) -> dict[str, int] | None:
    """The store's uppers, or None while it does not exist yet / cannot be reached."""
    if not _exists(location):
        return None
    try:
        rows = _query(location, _UPPERS)
    except Exception:  # down (a nemesis), being created, or locked: try again later
        return None
    return {str(c): int(u) for c, u in rows if int(u) > 0}


def read_progress(location: str) -> Progress | None:
    """Uppers and the bindings of the last sealed step of ``data`` (None while unreachable)."""
    uppers = read_uppers(location)
    if uppers is None:
        return None
    t = uppers.get("data", 0)
    try:
        rows = _query(location, _BOUND, (t,)) if t > 0 else []
    except Exception:
        return None
    return Progress(uppers, {int(bytes(k)): int(bytes(v)) for k, v in rows})


def _capture(fetch: Fetch, since_captured: dict[str, int]) -> Capture:
    """One capture through ``fetch(sql, params)`` inside an open read transaction."""
    found = fetch(_FRONTIERS, ())
    uppers = {str(c): int(u) for c, u, _ in found}
    sinces = {str(c): int(s) for c, _, s in found}
    ranges, missed = plan(since_captured, uppers, sinces)
    rows: list[tuple[str, bytes, bytes, int, int]] = []
    for c, (lo, hi) in sorted(ranges.items()):
        # as both drivers return them (text, bytea/BLOB, integers): no copy per row, which
        # cost a capture of 190,000 updates ~0.1 s (issue 28)
        rows += fetch(_STEPS, (c, lo, hi))
    return Capture(ranges, missed, rows)


def hold_captured(location: str, since_captured: dict[str, int], reader: str = READER) -> bool:
    """Hold the store's since at the captured steps: every step below ``since_captured[c]`` of
    each collection is kept by the harness, so compaction may merge up to the lowest of them
    minus one (:func:`sealcheck.rundir.captures.plan` counts step ``since`` as merged) and no
    further. A hold only moves forward. Waits for no lock (the pipeline's appends and
    compactions hold SQLite's): False when it was not written now (locked, down, or a store
    without ``holds``); the next capture writes it again.

    The write asks for no durability (a hold lost in a crash only keeps more history): it
    must not flush the pipeline's own commits along with it, or a pipeline whose commits are
    not durable would look durable. Not for a store on a lazy disk: closing the last
    connection of a stopped pipeline's store checkpoints it (:meth:`Deployment.capture`)."""
    since = min(since_captured.get(c, 0) for c in COLLECTIONS) - 1
    if since <= 0 or not _exists(location):
        return False
    try:
        if _postgres(location):
            import psycopg

            with psycopg.connect(location, connect_timeout=2, autocommit=True) as pg:
                pg.execute("SET statement_timeout = 1000")
                pg.execute("SET synchronous_commit = off")  # flushes none of the pipeline's
                pg.execute(_HOLD.format(p="%s", max="GREATEST"), (reader, since))
            return True
        uri = f"file:{_sqlite_path(location)}?mode=rw"  # never creates a store
        con = sqlite3.connect(uri, uri=True, timeout=0.05, isolation_level=None)
        try:
            con.execute("PRAGMA synchronous=OFF")  # no fsync of the pipeline's frames with it
            con.execute("PRAGMA wal_autocheckpoint=0")  # no checkpoint at this commit
            con.execute(_HOLD.format(p="?", max="MAX"), (reader, since))
        finally:
            con.close()
    except Exception:  # locked, down (a nemesis), or no holds table: the next capture retries
        return False
    return True


def read_capture(
    location: str, since_captured: dict[str, int], hold: bool = True
) -> Capture | None:
    """The updates of every collection from ``since_captured`` to its upper now, in one
    read-only transaction (:class:`sealcheck.systems.api.CapturesSteps`); None while
    unreachable. First, with ``hold``, the harness's read hold moves to ``since_captured``
    (:func:`hold_captured`)."""
    if not _exists(location):
        return None
    if hold:
        hold_captured(location, since_captured)
    try:
        with _snapshot(location) as fetch:  # the frontiers and the rows of one moment
            return _capture(fetch, since_captured)
    except Exception:  # down (a nemesis), being created, or locked: try again later
        return None


def _batches(cur: Any, size: int) -> Iterator[Sequence[tuple[Any, ...]]]:
    while rows := cur.fetchmany(size):
        yield rows


def export(location: str, run_dir: Path, batch: int = 200_000) -> None:
    """Export the store into ``run_dir`` (``export/updates.parquet`` + ``frontiers.json``);
    a SQLite store is also copied whole to ``export/store.db`` for post-mortems."""
    if _postgres(location):
        import psycopg

        with psycopg.connect(location) as con:
            rows = con.execute(_FRONTIERS + " WHERE upper > 0").fetchall()
            frontiers = {c: {"upper": int(u), "since": int(s)} for c, u, s in rows}
            with con.cursor(name="export") as cur:  # server-side: streamed in batches
                cur.execute(_ALL)
                write_export(run_dir, frontiers, _batches(cur, batch))
        return
    db = _sqlite_path(location)
    copy = run_dir / EXPORT_DIR / "store.db"
    copy_sqlite(db, copy)
    lite = sqlite3.connect(f"file:{copy}?mode=ro", uri=True)
    try:
        rows = lite.execute(_FRONTIERS).fetchall()
        frontiers = {c: {"upper": int(u), "since": int(s)} for c, u, s in rows}
        write_export(run_dir, frontiers, _batches(lite.execute(_ALL), batch))
    finally:
        lite.close()


def copy_sqlite(src: Path, dst: Path) -> None:
    """A consistent copy of a SQLite store (the online backup API, safe while it is written),
    left in rollback-journal mode so that reading it never creates or needs a WAL beside it."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    source, target = sqlite3.connect(src), sqlite3.connect(dst)
    try:
        source.backup(target)
        target.execute("PRAGMA journal_mode=DELETE")
    finally:
        source.close()
        target.close()
