"""The contract of every output of SQL tables without bindings (:class:`SQLiteOutput`,
:class:`PostgresOutput`), on real databases: a state per committed change, one consistent read
of every table (a transaction that moves a row from one table to the other is never seen
half done). SQLite runs in the unit suite; PostgreSQL (a real server in a container) in the
containers suite."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from sealcheck.systems.outputs import PostgresOutput, SQLiteOutput

DDL = (
    "CREATE TABLE t (id TEXT PRIMARY KEY, v INTEGER)",
    "CREATE TABLE bad (id TEXT PRIMARY KEY, v INTEGER)",
)
Execute = Callable[[list[tuple[str, tuple[Any, ...]]]], None]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.containers)])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Any, Execute]]:
    """An output over two fresh tables, and a way to commit statements in one transaction."""
    if request.param == "postgres":
        import psycopg

        dsn = request.getfixturevalue("postgres_server").new_database("snapshots")
        conn = psycopg.connect(dsn, autocommit=True)
        out: Any = PostgresOutput(dsn, "t", "id", "bad")
        mark = "%s"
    else:
        conn = sqlite3.connect(tmp_path / "x.db", isolation_level=None, check_same_thread=False)
        out = SQLiteOutput(tmp_path / "x.db", "t", "id", "bad")
        mark = "?"
    for ddl in DDL:
        conn.execute(ddl)
    lock = threading.Lock()

    def execute(statements: list[tuple[str, tuple[Any, ...]]]) -> None:
        with lock:
            conn.execute("BEGIN")
            for text, args in statements:
                conn.execute(text.replace("?", mark), args)
            conn.execute("COMMIT")

    yield out, execute
    conn.close()


def test_every_committed_change_is_a_state(database):
    out, execute = database
    assert out.uppers() == {"data": 0, "errors": 0}
    execute([("INSERT INTO t VALUES (?, ?)", ("a", 1))])
    assert out.uppers() == {"data": 1, "errors": 1}
    assert out.uppers() == {"data": 1, "errors": 1}  # nothing new: no new state
    execute([("UPDATE t SET v = ? WHERE id = ?", (2, "a"))])
    assert out.uppers() == {"data": 2, "errors": 2}
    got = out.capture({})
    assert sorted(got.rows) == [
        ("data", b"a", b'{"v":1}', 0, 1),
        ("data", b"a", b'{"v":1}', 1, -1),
        ("data", b"a", b'{"v":2}', 1, 1),
    ]


def test_a_transaction_over_two_tables_is_never_seen_half_done(database):
    out, execute = database
    execute([("INSERT INTO t VALUES (?, ?)", (str(k), 0)) for k in range(20)])
    stop = threading.Event()

    def move() -> None:  # each transaction moves one row from t to bad: 20 rows at all times
        for k in range(20):
            execute([("DELETE FROM t WHERE id = ?", (str(k),)),
                     ("INSERT INTO bad VALUES (?, ?)", (str(k), 0))])  # fmt: skip
        stop.set()

    mover = threading.Thread(target=move)
    mover.start()
    while not stop.is_set():
        out.uppers()
    mover.join()
    out.uppers()
    states: dict[int, int] = {}
    for _, _, _, ts, diff in out.capture({}).rows:
        states[ts] = states.get(ts, 0) + diff
    total = 0
    for ts in sorted(states):  # the running count of rows over both tables, state by state
        total += states[ts]
        assert total == 20, (ts, total)
