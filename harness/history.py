"""The history writer: one JSON object per line, written and flushed as it happens.

Every op has ``index`` (0, 1, … in file order), ``time`` (ns since the run started),
``process``, ``type`` (``invoke`` / ``ok`` / ``fail`` / ``info``), ``f`` and ``value`` (the
format is in ``docs/architecture.md``; :mod:`checkers.history` is its one reader). Lines are
flushed to the kernel one by one, so a harness killed mid-run leaves a history whose every
complete line can still be checked (a torn last line is skipped and reported); the final op
(:func:`record_inputs`) proves the history reached the end of the run.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any, TextIO


def encode_bytes(name: str, raw: bytes | None) -> dict[str, str | None]:
    """``{name: text}`` for UTF-8 bytes (or null), ``{name_hex: hex}`` otherwise."""
    if raw is None:
        return {name: None}
    try:
        return {name: raw.decode("utf-8")}
    except UnicodeDecodeError:
        return {f"{name}_hex": raw.hex()}


class HistoryWriter:
    """Appends ops to ``history.jsonl``; safe to call from any thread."""

    def __init__(self, path: Path, clock: Any = time.monotonic_ns) -> None:
        self.path = path
        self._clock = clock
        self._start = clock()
        self._lock = threading.Lock()
        self._index = 0
        self._fh: TextIO | None = open(path, "a", encoding="utf-8")  # noqa: SIM115 - long-lived
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
            return op

    def close(self) -> None:
        """Flush and close (idempotent)."""
        with self._lock:
            if self._fh is not None:
                self._fh.close()
                self._fh = None


def record_inputs(history: HistoryWriter, run_dir: Path) -> dict[str, Any]:
    """Write the history's final op: rows and SHA-256 of every input file the checkers will
    read (:func:`checkers.files.describe`) and how many writes were sent, acknowledged,
    left uncertain and failed. Called once the topic is dumped and the store exported; a
    history without it is judged incomplete."""
    from checkers.files import describe
    from checkers.history import FINAL_OP

    writes = {t: history.counts[("write", t)] for t in ("invoke", "ok", "info", "fail")}
    return history.append(
        "harness", "info", FINAL_OP, {"files": describe(run_dir), "writes": writes}
    )
