"""A Structured Streaming query's output in Delta tables, judged from files: its checkpoint's
offset log (the bindings) and the tables' change data feed (``data`` and ``errors``), read
with delta-rs and never through Spark (:mod:`sealcheck.systems.outputs.delta_log`,
:mod:`sealcheck.systems.outputs.delta_export`).

A job states where its output is and nothing else::

    DeltaOutput(checkpoint=dir / "checkpoint", data=dir / "accounts", key="id",
                errors=dir / "dead_letters", exclude=("batch_id", "loaded_at"))

With ``checkpoint=None`` the job is judged from its tables alone: no offset log is read, the
export keeps no ``bindings`` (``"kept": false``), every table version is an observed state for
the ``prefix`` checker — at the batches the commits name (Delta's ``txn`` or a ``batch=<id>``
``userMetadata``), both tables together, or else in commit order, each table alone
(``docs/systems.md``, "Outputs without bindings") — and the job is caught up once its
tables have settled (:attr:`settle_s`), as for a SQL table.

The tables need the change data feed on (``delta.enableChangeDataFeed = true``). A row is
compared as its key column(s) and, as JSON, its other columns without ``exclude`` (columns
of run metadata) — or, with ``value``, that one column's text as it is — through the same
encoding as the system's mapping (:mod:`sealcheck.core.effects`).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from sealcheck.systems.api import Progress
from sealcheck.systems.outputs import delta_log
from sealcheck.systems.outputs.base import Output
from sealcheck.systems.outputs.rows import TableRows


class _Seen:
    """When the tables' versions last changed (an output judged from its tables alone settles
    on it)."""

    def __init__(self) -> None:
        self.uppers: dict[str, int] | None = None
        self.changed_at = 0.0


@dataclass(frozen=True)
class DeltaOutput(Output, TableRows):
    """Where a Structured Streaming job writes: its checkpoint and its Delta tables."""

    #: the query's checkpoint (``checkpointLocation``); None: judge the tables alone
    checkpoint: Path | None
    #: the upserted table (change data feed on)
    data: Path
    #: its key column, or columns (a composite key)
    key: str | tuple[str, ...] = "key"
    #: the dead-letter table, if the job has one (None: ``errors`` stays empty)
    errors: Path | None = None
    #: the dead-letter table's key column(s) (None: ``key``)
    errors_key: str | tuple[str, ...] | None = None
    #: a column holding the row's value as it is (None: the other columns, as JSON)
    value: str | None = None
    #: columns of run metadata, never compared (a batch id, a load time)
    exclude: tuple[str, ...] = ()
    #: the checkpoint of a separate query that writes the dead letters (None: ``checkpoint``)
    errors_checkpoint: Path | None = None
    #: the topic in the offset log (None: the one topic the query reads)
    topic: str | None = None
    #: judged from the tables alone (no ``checkpoint``): how long the tables must stay
    #: unchanged, with the job running, for the harness to call the job caught up
    settle_s: float = 30.0
    _seen: _Seen = field(default_factory=_Seen, init=False, repr=False, compare=False)

    def tables(self) -> dict[str, tuple[Path, Path | None]]:
        """Each collection's table and the checkpoint of the query that writes it (None:
        the tables alone)."""
        out: dict[str, tuple[Path, Path | None]] = {"data": (self.data, self.checkpoint)}
        if self.errors is not None:
            out["errors"] = (self.errors, self.errors_checkpoint or self.checkpoint)
        return out

    def uppers(self) -> dict[str, int] | None:
        """``bindings``: one past the newest ``offsets/N``; each table: one past the newer of
        its newest commit's batch and the newest ``commits/N`` of its query
        (:func:`~sealcheck.systems.outputs.delta_log.upper`); ``errors`` without a dead-letter
        table follows ``data``. Judged from the tables alone: each table's version count and
        no ``bindings``. None before the query wrote anything."""
        if self.checkpoint is None:
            return self._table_uppers()
        try:
            if not self.checkpoint.exists() and not self.data.exists():
                return None
            planned = delta_log.checkpoint_batches(self.checkpoint)
            out = {"bindings": planned[-1] + 1 if planned else 0}
            for name, (table, checkpoint) in self.tables().items():
                out[name] = delta_log.upper(table, checkpoint or self.checkpoint)
            out.setdefault("errors", out["data"])
            return out
        except (OSError, ValueError):
            return None  # a file being replaced as it was read: the next sample sees it

    def _table_uppers(self) -> dict[str, int] | None:
        try:
            if not self.data.exists():
                return None
            tables = self.tables().items()
            out = {name: len(delta_log.versions(table)) for name, (table, _) in tables}
        except OSError:
            return None
        out.setdefault("errors", out["data"])
        return out

    def progress(self) -> Progress | None:
        """Uppers and the end offsets of the last batch every table sealed; judged from the
        tables alone, the uppers and when they last changed (:attr:`settle_s`)."""
        ups = self.uppers()
        if ups is None:
            return None
        if self.checkpoint is None:
            seen = self._seen
            if ups != seen.uppers:
                seen.uppers, seen.changed_at = ups, time.monotonic()
            return Progress(ups, {}, settle_s=self.settle_s, changed_at=seen.changed_at)
        t = min(ups.get("data", 0), ups.get("errors", 0))
        try:
            bound = delta_log.offsets(self.checkpoint, t - 1, self.topic) if t > 0 else {}
        except (OSError, ValueError, KeyError):
            return None
        return Progress(ups, bound)

    def export(self, run_dir: Path) -> None:
        """The change feeds and the offset log into ``run_dir`` in the checkers' format, with
        ``export/versions.json`` and ``export/asof.parquet``
        (:mod:`~sealcheck.systems.outputs.delta_export`, in a child process: delta-rs's
        runtime may abort the interpreter at exit)."""
        spec = json.dumps(self.to_json())
        cmd = [sys.executable, "-m", "sealcheck.systems.outputs.delta_export", spec, str(run_dir)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-10:])
            raise RuntimeError(f"the Delta export failed (exit {proc.returncode}):\n{tail}")

    def to_json(self) -> dict[str, Any]:
        """The spec as JSON (paths as text)."""
        values = {f.name: getattr(self, f.name) for f in fields(self) if f.init}
        return {k: str(v) if isinstance(v, Path) else v for k, v in values.items()}

    @staticmethod
    def from_json(doc: dict[str, Any]) -> DeltaOutput:
        """The spec :meth:`to_json` wrote."""
        paths = ("checkpoint", "data", "errors", "errors_checkpoint")
        values: dict[str, Any] = {}
        for k, v in doc.items():
            values[k] = Path(v) if k in paths and v is not None else v
            if isinstance(v, list):
                values[k] = tuple(v)
        return DeltaOutput(**values)
