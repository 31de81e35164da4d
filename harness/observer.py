"""The observer: samples the store's uppers into the history while the run goes on.

It reads the store (SQLite read-only — WAL lets it read while the pipeline writes — or
PostgreSQL) every
``interval_s`` and writes an ``observer uppers`` op whenever they changed, and at least every
``heartbeat_s``; ``seal_monotonic`` and the report's timeline read these ops.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

from harness.history import HistoryWriter


def read_uppers(location: str) -> dict[str, int] | None:
    """The store's uppers, or None while it does not exist yet / cannot be reached."""
    if location.startswith(("postgresql://", "postgres://")):
        try:
            import psycopg

            with psycopg.connect(location, connect_timeout=2) as pg:
                rows = pg.execute(
                    "SELECT collection, upper FROM frontiers WHERE upper > 0"
                ).fetchall()
        except Exception:  # down (a nemesis) or not created yet: try again later
            return None
        return {str(c): int(u) for c, u in rows}
    db = Path(location)
    if not db.exists():
        return None
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1.0)
        try:
            rows = con.execute("SELECT collection, upper FROM frontiers").fetchall()
        finally:
            con.close()
    except sqlite3.Error:
        return None
    return {str(c): int(u) for c, u in rows}


class Observer:
    """A thread writing the store's uppers into the history when they move."""

    def __init__(
        self,
        store: str | Callable[[], str],
        history: HistoryWriter,
        interval_s: float = 0.25,
        heartbeat_s: float = 5.0,
    ) -> None:
        self.store, self.history = store, history
        self.interval_s, self.heartbeat_s = interval_s, heartbeat_s
        self.last: dict[str, int] = {}
        self._written = time.monotonic()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start sampling."""
        self._thread = threading.Thread(target=self._run, name="observer", daemon=True)
        self._thread.start()

    def sample(self) -> dict[str, int] | None:
        """Read once and record if changed (or the heartbeat is due)."""
        uppers = read_uppers(self.store() if callable(self.store) else self.store)
        due = time.monotonic() - self._written > self.heartbeat_s
        if uppers is not None and (uppers != self.last or due):
            self.history.append("observer", "info", "uppers", uppers)
            self.last = uppers
            self._written = time.monotonic()
        return uppers

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.sample()

    def stop(self) -> None:
        """Stop sampling (one last sample first)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        self.sample()
