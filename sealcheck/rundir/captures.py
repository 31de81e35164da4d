"""The sealed steps the harness captured while the run went on (``captures.arrows``).

A store that compacts merges its oldest steps into one; an export made at the end then holds
those steps only merged, and no checker could judge them one by one. So the observer reads
each sealed step's updates from the store right after it sees an upper advance, in one read
and before compaction can reach them (a read hold can keep compaction behind what was
captured: ``CapturesSteps``), and appends them here:

* ``captures.arrows``: an Arrow IPC *stream* of ``collection, key, value, ts, diff`` rows
  (binary key and value), one record batch per capture, flushed after each — a harness killed
  mid-run leaves every complete batch readable; its schema carries the run's id
  (:mod:`sealcheck.rundir.runid`);
* one history op per capture (``observer info captured``, :data:`CAPTURED_OP`): per collection
  the range of steps ``[lo, hi)`` whose updates the batch holds one by one, and the steps that
  compaction had already merged before they could be read (``missed``).

The history's final op lists the file like every other input
(:func:`sealcheck.rundir.files.describe`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from sealcheck.rundir.files import CAPTURES, EXPORT_SCHEMA
from sealcheck.rundir.runid import stamp_schema

__all__ = ["CAPTURED_OP", "CAPTURES", "SCHEMA", "Capture", "CaptureWriter", "plan", "read"]

#: the history op recording what one capture holds
CAPTURED_OP = "captured"
#: the columns of ``captures.arrows``: the export's
SCHEMA = EXPORT_SCHEMA


@dataclass(frozen=True)
class Capture:
    """What one read of a store returned: the updates of the steps ``[lo, hi)`` of each
    collection (``ranges``), the steps below that compaction had merged before they could be
    read one by one (``missed``: ``[a, b)`` per collection), and the rows themselves."""

    ranges: dict[str, tuple[int, int]]
    missed: dict[str, tuple[int, int]] = field(default_factory=dict)
    rows: list[tuple[str, bytes, bytes, int, int]] = field(default_factory=list)

    def op_value(self) -> dict[str, Any]:
        """The history op's value (everything but the rows, which go to the file)."""
        return {
            "ranges": {c: list(r) for c, r in sorted(self.ranges.items())},
            "missed": {c: list(r) for c, r in sorted(self.missed.items())},
            "rows": len(self.rows),
        }


def plan(
    since_captured: dict[str, int], uppers: dict[str, int], sinces: dict[str, int]
) -> tuple[dict[str, tuple[int, int]], dict[str, tuple[int, int]]]:
    """Which steps of each collection a read of the store at ``uppers``/``sinces`` can still
    return one by one, given that every step below ``since_captured[c]`` was captured before.

    Compaction to ``since`` merges the updates below it (into times below ``since``, which
    every reader takes as ``since``), so once a collection has been compacted (``since > 0``)
    its steps below ``since`` are no longer apart. Step ``since`` itself still is, but it is
    counted with the merged ones: steps ``[lo, since]`` not captured yet are missed (an
    under-claim, never an over-claim), the rest ``(since, upper)`` can be read.
    Returns ``(ranges, missed)``; a collection with nothing new is left out of both.
    """
    ranges: dict[str, tuple[int, int]] = {}
    missed: dict[str, tuple[int, int]] = {}
    for c, upper in uppers.items():
        lo = since_captured.get(c, 0)
        if upper <= lo:
            continue
        since = sinces.get(c, 0)
        first = since + 1 if since > 0 else 0
        if first > lo:
            missed[c] = (lo, min(first, upper))
        start = max(lo, first)
        if start < upper:
            ranges[c] = (start, upper)
    return ranges, missed


class CaptureWriter:
    """Appends captures to ``captures.arrows`` (the file is created on the first one)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._sink: Any = None
        self._writer: Any = None
        self._closed = False

    def write(self, capture: Capture) -> None:
        """Append one capture's rows as a record batch and flush it to the file; after
        :meth:`close`, a ``ValueError`` (the file is an input of the run by then)."""
        if self._closed:
            raise ValueError(f"{self.path} is closed: nothing may be captured after the run")
        if self._writer is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._sink = pa.OSFile(str(self.path), "wb")
            schema = stamp_schema(SCHEMA, self.path.parent)  # the run's id (test.json's)
            self._writer = pa.ipc.new_stream(self._sink, schema)
        cols: list[Any] = list(zip(*capture.rows, strict=True)) if capture.rows else [()] * 5
        arrays = [pa.array(c, f.type) for c, f in zip(cols, SCHEMA, strict=True)]
        batch = pa.record_batch(arrays, schema=SCHEMA)
        self._writer.write_batch(batch)
        self._sink.flush()

    def close(self) -> None:
        """End the stream (idempotent)."""
        self._closed = True
        if self._writer is not None:
            self._writer.close()
            self._sink.close()
            self._writer = self._sink = None


def read(data: bytes) -> pa.Table:
    """Every captured row (``collection, key, value, ts, diff``) of the file's bytes, read once
    (:func:`sealcheck.rundir.files.hold`: the table points into them, nothing is copied);
    raises ``pyarrow.ArrowInvalid`` on bytes that are not a whole stream."""
    return pa.ipc.open_stream(pa.py_buffer(data)).read_all()
