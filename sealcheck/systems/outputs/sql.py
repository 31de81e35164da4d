"""A job's output in SQL tables that keep no bindings, observed from outside: the harness takes
consistent snapshots of the tables while the run goes on and judges the sequence of states
with the ``prefix`` checker (``docs/systems.md``, "Outputs without bindings").

A job states where its tables are and nothing else::

    SQLiteOutput(dir / "accounts.db", data="accounts", key="id", errors="dead_letters",
                 exclude=("batch_id", "updated_at"))

* **Snapshots.** Four times a second (the observer's samples) the harness asks the database
  whether anything was committed since its last look (SQLite's ``PRAGMA data_version``, on a
  read-only connection of its own); if so it reads every table in one read transaction — a
  consistent state of all of them — and, if the state differs from the last one, records it as
  the next *state*: ``data`` and ``errors`` as ``(key, value, ts = state, diff)`` updates
  against the previous state. States go to ``captures.arrows`` as they are taken
  (:mod:`sealcheck.rundir.captures`: a run whose harness was killed keeps them) and into the
  export at the end.
* **Batches.** With windows told by the job's checkpoint declared, each state records the
  job's newest committed batch before its read and newest planned one after
  (:meth:`Snapshots.watch_checkpoint`), written to ``versions.json`` at the export
  (:mod:`sealcheck.rundir.states`): an anomaly at a state names the batches it follows.
* **No bindings.** The export has no ``bindings`` collection: the checkers that need one are
  *not applicable*; ``prefix`` judges every state, ``diff_of_one``, ``unique_key`` and
  ``no_phantoms`` judge the rows.
* **Catch-up.** Without bindings nothing shows that the job read the log end: the harness calls
  the output caught up once neither it nor the job's directory (its checkpoint: a batch under
  way) has changed for ``settle_s`` with the job running and no batch in flight
  (:meth:`sealcheck.systems.job.JobDeployment.progress`)
  (:meth:`sealcheck.systems.api.Progress.settled`), and the ``prefix`` checker then judges the
  last state as the whole input's.
* **Batches of several transactions.** A job that commits one batch in several transactions
  (``between_batches=True``) leaves states between them that no prefix explains; its states are
  then taken only between batches — when the job's declared crash windows show no batch in
  flight before and after the read, with no new batch planned meanwhile
  (:func:`sealcheck.systems.job_checkpoint.batch_boundary`).
* **Under-observed.** A state the job held for less than a sample's interval may never be
  seen; every state seen is judged. A run in which fewer than two states were seen judged
  nothing of the run's course: ``prefix`` says so (unknown).

A row is compared as its key column(s) and, as JSON, its other columns without ``exclude`` —
or, with ``value``, that one column's text (:class:`sealcheck.systems.outputs.rows.Encoder`);
SQLite ``TEXT`` that is not UTF-8 is read with U+FFFD replacement
(:func:`sealcheck.systems.outputs.rows.text`). A row that cannot be (a NULL key, a key column
that is not there) is said at the first read that meets it, in one line, as
:class:`~sealcheck.systems.api.Unjudgeable`: the harness halts the run and judges the states
seen before it.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sealcheck.core.effects import EffectError
from sealcheck.core.said import cut
from sealcheck.rundir.captures import Capture
from sealcheck.rundir.files import VERSIONS, write_export
from sealcheck.rundir.states import Checkpoint, StateBatchRecorder, write_states
from sealcheck.systems.api import Progress, Unjudgeable
from sealcheck.systems.outputs.base import Output
from sealcheck.systems.outputs.rows import Encoder, TableRows, text

#: the collections a snapshot fills (a table each)
COLLECTIONS = ("data", "errors")
Row = tuple[str, bytes, bytes, int, int]


class OutputError(RuntimeError):
    """The output cannot be exported as it is (the message says why and what to do)."""


class SnapshotStates:
    """The states seen so far and the updates between them (one per output, shared by the
    observer's thread and the catch-up loop)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.conn: Any = None
        self.version: Any = None
        self.last: dict[str, Counter[tuple[bytes, bytes]]] = {c: Counter() for c in COLLECTIONS}
        self.count = 0  # states recorded: the next state's ts
        self.exists = False  # the tables were read at least once
        self.rows: list[Row] = []  # every update, for the export
        self.captured = 0  # rows handed to captures
        self.changed_at = 0.0
        #: a row the encoding could not take (:class:`Unjudgeable`, raised from then on)
        self.error: str | None = None
        #: with ``between_batches``: the batch the job is between (a token), None while a
        #: batch is in flight (:func:`sealcheck.systems.job_checkpoint.batch_boundary`)
        self.boundary: Callable[[], str | None] | None = None
        #: the job's batches at each state recorded (:mod:`sealcheck.rundir.states`)
        self.batches = StateBatchRecorder()


class Snapshots(Output, TableRows):
    """What every output of SQL tables without bindings does (a mixin of the dataclasses
    below, which say how to connect, how to tell that something was committed, and how to
    read a table): snapshots as states, uppers, progress, captures, the export."""

    data: str
    errors: str | None
    settle_s: float
    between_batches: bool
    _states: SnapshotStates

    def watch_batches(self, boundary: Callable[[], str | None]) -> None:
        """Take states only between batches, as ``boundary`` tells (``between_batches``)."""
        self._states.boundary = boundary

    def watch_checkpoint(self, checkpoint: Checkpoint) -> None:
        """Record at each state the job's batches, as its ``checkpoint`` tells (newest
        committed before the read, newest planned after)."""
        self._states.batches.checkpoint = checkpoint

    def tables(self) -> dict[str, tuple[str, Encoder]]:
        """Each collection's table and how its rows are encoded."""
        out = {"data": (self.data, self.row_shape.encoder("data"))}
        if self.errors is not None:
            out["errors"] = (self.errors, self.row_shape.encoder("errors"))
        return out

    def _connect(self) -> Any:
        """A read-only connection of the harness's own (None: the database is not there)."""
        raise NotImplementedError

    def _version(self, conn: Any) -> Any:
        """A value that changes whenever something was committed (cheap)."""
        raise NotImplementedError

    def _read(self, conn: Any) -> dict[str, list[dict[str, Any]]]:
        """Every table's rows, in one read transaction: one consistent state."""
        raise NotImplementedError

    def _close(self) -> None:
        s = self._states
        if s.conn is not None:
            with contextlib.suppress(Exception):
                s.conn.close()
            s.conn, s.version = None, None  # a new connection's version is its own

    def observe(self, strict: bool = False) -> int | None:
        """Take a snapshot if anything was committed since the last one; the number of states
        recorded (None while the tables cannot be read yet). A read that fails counts as a
        change (an unreadable database never looks quiet); with ``strict`` it raises
        :class:`OutputError` instead (the export: a final state that cannot be read is not
        judged as the last one seen). Rows the encoding cannot take (a NULL key, a key column
        that is not there, a value of a type no record gives) are :class:`Unjudgeable`, at the
        first read that meets them and at every call after it."""
        s = self._states
        with s.lock:
            if s.error is not None:
                raise Unjudgeable(s.error)
            try:
                if s.conn is None:
                    s.conn = self._connect()
                    if s.conn is None:
                        if strict:
                            raise OutputError(f"{self.where()}: the database is not there")
                        return None
                committed = s.batches.committed()
                version = self._version(s.conn)
                if version == s.version and s.exists and not strict:
                    s.batches.unchanged(committed)  # nothing committed since the last read
                    return s.count
                between = s.boundary() if s.boundary is not None else ""
                if between is None:  # a batch in flight: not a state of the job's
                    if strict:
                        raise OutputError(f"{self.where()}: a batch was in flight at the end")
                    return s.count if s.exists else None
                read = self._read(s.conn)
                planned = s.batches.planned()
                if s.boundary is not None and s.boundary() != between:
                    return s.count if s.exists else None  # a batch began during the read
            except self.errors_of_reading as exc:  # not created yet, locked, or the server gone
                self._close()  # a new connection at the next sample
                s.changed_at = time.monotonic()
                if strict:
                    raise OutputError(f"{self.where()}: cannot be read: {exc}") from None
                return s.count if s.exists else None
            state = {c: Counter[tuple[bytes, bytes]]() for c in COLLECTIONS}
            for name, (table, encode) in self.tables().items():
                try:
                    state[name] = Counter(encode(row) for row in read[name])
                except (KeyError, EffectError) as exc:  # said now, in one line; the run halts
                    s.error = unjudgeable(self.where(), name, table, encode, read[name], exc)
                    raise Unjudgeable(s.error) from None
            s.version, s.exists = version, True
            rows: list[Row] = []
            for c in COLLECTIONS:
                for (k, v), n in (state[c] - s.last[c]).items():
                    rows.append((c, k, v, s.count, n))
                for (k, v), n in (s.last[c] - state[c]).items():
                    rows.append((c, k, v, s.count, -n))
            if rows:
                s.batches.taken(committed, planned)
                s.rows.extend(rows)
                s.last, s.count, s.changed_at = state, s.count + 1, time.monotonic()
            else:  # the same state as the last one
                s.batches.unchanged(committed)
            return s.count

    def where(self) -> str:
        """The database, for people (no password)."""
        raise NotImplementedError

    #: the exceptions that mean "cannot be read now" (the next sample tries again)
    errors_of_reading: tuple[type[BaseException], ...] = (sqlite3.Error,)

    def uppers(self) -> dict[str, int] | None:
        """``data`` and ``errors``: the states recorded (a snapshot is taken first, when
        anything was committed since the last one); None before the tables can be read."""
        n = self.observe()
        return None if n is None else {c: n for c in COLLECTIONS}

    def progress(self) -> Progress | None:
        """The uppers, no bound offsets, and when the tables last changed (:attr:`settle_s`)."""
        ups = self.uppers()
        if ups is None:
            return None
        return Progress(ups, {}, settle_s=self.settle_s, changed_at=self._states.changed_at)

    def capture(self, since_captured: dict[str, int]) -> Capture | None:
        """The states recorded since the last capture, as updates (they never merge)."""
        s = self._states
        with s.lock:
            rows, s.captured = s.rows[s.captured :], len(s.rows)
            lo = min(since_captured.get(c, 0) for c in COLLECTIONS)
            if s.count <= lo:
                return None
            return Capture({c: (since_captured.get(c, 0), s.count) for c in COLLECTIONS}, {}, rows)

    def export(self, run_dir: Path) -> None:
        """Every state recorded, as updates (``data``, ``errors``), after one last read that
        must succeed; ``bindings`` is written as not kept (``"kept": false``: the checkers that
        need it are not applicable). An :class:`OutputError` when the last read fails (the run
        is then not judged); :class:`Unjudgeable` when a row could not be compared, after
        writing the states seen before it (they are judged; the run is not valid)."""
        try:
            with contextlib.suppress(Unjudgeable):  # the states before it are written first
                self.observe(strict=True)
            s = self._states
            with s.lock:
                frontiers: dict[str, dict[str, Any]] = {
                    c: {"upper": s.count, "since": 0} for c in COLLECTIONS
                }
                frontiers["bindings"] = {"upper": 0, "since": 0, "kept": False}
                write_export(run_dir, frontiers, [s.rows] if s.rows else [])
                write_states(run_dir / VERSIONS, s.batches.record(), run_dir)
                if s.error is not None:
                    raise Unjudgeable(s.error)
        finally:
            self.close()

    def close(self) -> None:
        """Close the harness's connection (teardown; idempotent)."""
        with self._states.lock:
            self._close()


def unjudgeable(
    where: str,
    collection: str,
    table: str,
    encode: Encoder,
    rows: list[dict[str, Any]],
    exc: Exception,
) -> str:
    """One line saying which row of ``table`` (the ``collection``'s) the encoding could not
    take and what to do: the first row whose key column is NULL or missing, told by the rows
    themselves; else the encoding's own error ``exc``."""
    for row in rows:
        missing = [c for c in (*encode.key, encode.value) if c is not None and c not in row]
        if missing:
            return (
                f"{where}: table {table} has no column {missing[0]} (its columns: "
                f"{', '.join(row)}): give the output the table's key column(s) as key= (and "
                "its value column as value=)"
            )
        if len(encode.key) == 1 and row[encode.key[0]] is None:
            shown = {c: v for c, v in row.items() if c not in encode.key and v is not None}
            what = "a dead letter" if collection == "errors" else "a row"
            todo = (
                "give every dead letter a key (say, the record's partition:offset)"
                if collection == "errors"
                else "make the job and effect() send such records to a dead letter "
                "(DeadLetter) or SKIP them"
            )
            return (
                f"{where}: table {table} holds {what} whose key column {encode.key[0]} is NULL "
                f"({_brief(shown)}): a row without a key cannot be judged. If the job should "
                f"not store records without a key, that is a bug in the job; otherwise {todo}"
            )
    return f"{where}: a row of {table} cannot be compared ({exc})"


def _brief(row: dict[str, Any], limit: int = 120) -> str:
    """A row's columns for a message, cut at ``limit`` characters."""
    return cut(", ".join(f"{c}={v!r}" for c, v in row.items()) or "no other column set", limit)


@dataclass(frozen=True)
class SQLiteOutput(Snapshots):
    """A job's tables in one SQLite database file, snapshotted by the harness."""

    #: the database file
    path: Path
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

    def _connect(self) -> sqlite3.Connection | None:
        if not self.path.exists():
            return None
        uri = f"file:{self.path.resolve()}?mode=ro"
        conn = sqlite3.connect(
            uri, uri=True, timeout=0.2, isolation_level=None, check_same_thread=False
        )
        conn.row_factory = sqlite3.Row
        conn.text_factory = text  # TEXT that is not UTF-8 with U+FFFD, not an error
        return conn

    def where(self) -> str:
        """The database file."""
        return str(self.path)

    def _version(self, conn: sqlite3.Connection) -> Any:
        # changes whenever another connection commits (https://sqlite.org/pragma.html)
        return conn.execute("PRAGMA data_version").fetchone()[0]

    def _read(self, conn: sqlite3.Connection) -> dict[str, list[dict[str, Any]]]:
        conn.execute("BEGIN")
        try:
            out: dict[str, list[dict[str, Any]]] = {c: [] for c in COLLECTIONS}
            for name, (table, _) in self.tables().items():
                quoted = '"' + table.replace('"', '""') + '"'
                out[name] = [dict(r) for r in conn.execute(f"SELECT * FROM {quoted}")]
            return out
        finally:
            conn.execute("COMMIT")

    def to_json(self) -> dict[str, Any]:
        """The spec as JSON (for people and logs)."""
        return {"path": str(self.path), "data": self.data, "errors": self.errors}
