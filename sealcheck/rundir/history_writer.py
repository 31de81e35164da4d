"""The one writer of a run's history (:mod:`sealcheck.rundir.history`): one op per line,
flushed to the kernel at once, so a harness killed mid-run leaves a history whose every complete
line can be checked; the acknowledged writes go to ``acks.arrows`` beside it
(:mod:`sealcheck.rundir.acks`); the final op (:func:`record_inputs`) proves the history reached
the end of the run."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any, TextIO

from sealcheck.rundir import acks as ack_file
from sealcheck.rundir.history import FINAL_OP
from sealcheck.rundir.schema import encode_bytes


class HistoryWriter:
    """Appends ops to ``history.jsonl``; safe to call from any thread."""

    def __init__(self, path: Path, clock: Any = time.monotonic_ns) -> None:
        self.path = path
        self._clock = clock
        self._start = clock()
        self._lock = threading.Lock()
        self._index = 0
        self._fh: TextIO | None = open(path, "a", encoding="utf-8")  # noqa: SIM115 - long-lived
        #: the acknowledged writes, beside the history (:meth:`ack`)
        self.acks = ack_file.AckWriter(path.parent / ack_file.ACKS)
        #: ops written, per ``(f, type)`` (for progress displays)
        self.counts: Counter[tuple[str, str]] = Counter()

    def now_ns(self) -> int:
        """Nanoseconds since the history started."""
        return int(self._clock() - self._start)

    def append(self, process: str, type_: str, f: str, value: Any = None) -> dict[str, Any]:
        """Write one op now and return it (with its ``index`` and ``time``)."""
        with self._lock:
            op = {
                "index": self._index,
                "time": self.now_ns(),
                "process": process,
                "type": type_,
                "f": f,
                "value": value,
            }
            if self._fh is None:
                raise ValueError(f"history {self.path} is closed; op {op!r} was not written")
            self._fh.write(json.dumps(op, separators=(",", ":")) + "\n")
            self._fh.flush()
            self._index += 1
            self.counts[(f, type_)] += 1
            self.acks.flush_if_due()
            return op

    def ack(
        self, process: str, key: bytes | None, value: bytes | None, partition: int, offset: int
    ) -> None:
        """Record that a write was acknowledged at ``partition``/``offset``: a row of
        ``acks.arrows`` (:mod:`sealcheck.rundir.acks`), stamped now on the history's clock.
        After :meth:`close_acks` (the run has ended), an ``ok`` op in the history instead,
        which the reader finds after the final op."""
        with self._lock:
            if not self.acks.closed:
                self.acks.append(self.now_ns(), partition, offset, key, value)
                self.counts[("write", "ok")] += 1
                return
        where = {"partition": partition, "offset": offset}
        self.append(
            process,
            "ok",
            "write",
            {**encode_bytes("key", key), **encode_bytes("value", value), **where},
        )

    def close_acks(self) -> None:
        """Write the buffered acknowledgements and end ``acks.arrows`` (idempotent): before
        the final op lists it."""
        with self._lock:
            self.acks.close()

    def close(self) -> None:
        """Flush and close both files (idempotent)."""
        with self._lock:
            self.acks.close()
            if self._fh is not None:
                self._fh.close()
                self._fh = None


def record_inputs(history: HistoryWriter, run_dir: Path) -> dict[str, Any]:
    """Write the history's final op: rows and SHA-256 of every input file the checkers will
    read (:func:`sealcheck.rundir.files.describe`) and how many writes were sent, acknowledged,
    left uncertain and failed. Called once the topic is dumped and the store exported; a
    history without it is judged incomplete."""
    from sealcheck.rundir.files import describe

    history.close_acks()
    writes = {t: history.counts[("write", t)] for t in ("invoke", "ok", "info", "fail")}
    return history.append(
        "harness", "info", FINAL_OP, {"files": describe(run_dir), "writes": writes}
    )
