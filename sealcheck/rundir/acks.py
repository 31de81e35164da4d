"""The acknowledged writes of a run (``acks.arrows``), beside its history.

A write's acknowledgement is the bulk of a history: one JSON line each made a 10M-record run's
history 2 GB, and reading it most of the checkers' time. So the harness appends each ``ok``
write here instead, column-wise, and keeps every other op (a write's ``invoke``, its ``fail``
or ``info``, everything else) in ``history.jsonl``:

* ``acks.arrows``: an Arrow IPC *stream* of ``time, partition, offset, key, value`` rows (the
  frame :attr:`sealcheck.rundir.history.History.acked` is: ``time`` on the history's clock,
  binary key and value, null for null), in the order the acknowledgements arrived. Rows are
  written as a record batch once the oldest has waited :data:`FLUSH_S` seconds — at the next
  acknowledgement or history op after that (the observer writes one at least every 5 s) —
  and at the end; a harness killed mid-run leaves every complete batch readable
  (:func:`read` keeps them and counts the bytes of a torn last one). Its schema carries the
  run's id (:mod:`sealcheck.rundir.runid`). The rows still buffered
  at such a kill are not in the file; such a run never reaches its final op, so its verdict
  is UNKNOWN whatever the checkers find.
* The history's final op lists the file in its manifest like every other input
  (:func:`sealcheck.rundir.files.describe`) and counts its rows (``writes.ok``), so a file
  changed, cut or swapped after the run makes the verdict UNKNOWN.

Runs stored before this file existed keep their ``ok`` writes in the history;
:meth:`sealcheck.rundir.history.History.load` reads both.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa

from sealcheck.rundir.files import ACKS
from sealcheck.rundir.runid import stamp_schema

__all__ = ["ACKS", "FLUSH_S", "SCHEMA", "AckWriter", "read"]

#: the most seconds an arriving acknowledgement waits before it is written to the file
FLUSH_S = 0.2
#: rows per record batch at most
_BATCH_ROWS = 1 << 16

#: The columns of ``acks.arrows``.
SCHEMA = pa.schema(
    [
        ("time", pa.int64()),
        ("partition", pa.int64()),
        ("offset", pa.int64()),
        ("key", pa.binary()),
        ("value", pa.binary()),
    ]
)
#: buffers compressed with zstd: keys and values of a workload repeat
_OPTIONS = pa.ipc.IpcWriteOptions(compression="zstd")


class AckWriter:
    """Appends acknowledged writes to ``acks.arrows`` (created on the first one). Not
    thread-safe: :class:`sealcheck.rundir.history_writer.HistoryWriter` calls it under its lock."""

    def __init__(self, path: Path, clock: Callable[[], float] = time.monotonic) -> None:
        self.path = path
        self._clock = clock
        self._rows: list[list[Any]] = [[], [], [], [], []]
        self._due = 0.0  # when the oldest buffered row must be written
        self._sink: Any = None
        self._writer: Any = None
        self._closed = False
        #: rows written to the file or waiting to be
        self.count = 0

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` ran (the file is an input of the run by then)."""
        return self._closed

    def append(
        self, time_ns: int, partition: int, offset: int, key: bytes | None, value: bytes | None
    ) -> None:
        """Buffer one acknowledgement; write the buffer out when its oldest row has waited
        :data:`FLUSH_S` or it is full. A ``ValueError`` after :meth:`close`."""
        if self._closed:
            raise ValueError(f"{self.path} is closed: no acknowledgement may follow the run")
        if not self._rows[0]:
            self._due = self._clock() + FLUSH_S
        for column, item in zip(self._rows, (time_ns, partition, offset, key, value), strict=True):
            column.append(item)
        self.count += 1
        if len(self._rows[0]) >= _BATCH_ROWS or self._clock() >= self._due:
            self.flush()

    def extend(self, table: pa.Table) -> None:
        """Append a whole table of rows of :data:`SCHEMA` (a bench's bulk write)."""
        self.flush()
        self._write(table.cast(SCHEMA).combine_chunks())
        self.count += table.num_rows

    def flush_if_due(self) -> None:
        """Write the buffered rows if the oldest has waited :data:`FLUSH_S` (the history's
        writer calls it with every op, so rows do not wait for the next acknowledgement)."""
        if self._rows[0] and self._clock() >= self._due:
            self.flush()

    def flush(self) -> None:
        """Write the buffered rows as one record batch, to the kernel."""
        if not self._rows[0]:
            return
        arrays = [pa.array(c, f.type) for c, f in zip(self._rows, SCHEMA, strict=True)]
        self._rows = [[], [], [], [], []]
        self._write(pa.Table.from_arrays(arrays, schema=SCHEMA))

    def _write(self, table: pa.Table) -> None:
        if self._writer is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._sink = pa.OSFile(str(self.path), "wb")
            schema = stamp_schema(SCHEMA, self.path.parent)  # the run's id (test.json's)
            self._writer = pa.ipc.new_stream(self._sink, schema, options=_OPTIONS)
        self._writer.write_table(table, max_chunksize=_BATCH_ROWS)
        self._sink.flush()

    def close(self) -> None:
        """Write what is buffered and end the stream (idempotent). A run with no
        acknowledgement gets no file."""
        if self._closed:
            return
        self.flush()
        self._closed = True
        if self._writer is not None:
            self._writer.close()
            self._sink.close()
            self._writer = self._sink = None


def read(path: Path) -> tuple[pa.Table, int]:
    """Every complete record batch of ``path`` as one table, and how many bytes follow the
    last of them unread (a batch cut by a crash, or bytes that are not a batch: 0 for a
    whole stream). Raises ``OSError`` when the file cannot be opened, ``pyarrow.ArrowInvalid``
    when it does not start as a stream of :data:`SCHEMA`."""
    size = path.stat().st_size
    batches: list[pa.RecordBatch] = []
    with pa.OSFile(str(path), "rb") as source:
        reader = pa.ipc.open_stream(source)
        if not reader.schema.equals(SCHEMA):
            raise pa.ArrowInvalid(f"{path} holds {reader.schema}, not acknowledged writes")
        good = source.tell()
        while True:
            try:
                batches.append(reader.read_next_batch())
            except StopIteration:
                good = source.tell()  # the end-of-stream marker, or the end of the file
                break
            except (pa.ArrowInvalid, OSError):
                break
            good = source.tell()
    return pa.Table.from_batches(batches, schema=SCHEMA), size - good
