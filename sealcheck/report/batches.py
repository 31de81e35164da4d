"""The report's sections on micro-batches and table versions, for systems whose export writes
``export/versions.json`` with its tables (the delta-streaming job): per batch, whether it was
planned and committed by Spark, which versions of each table belong to it, and which
incarnations started it — so a replay (a batch run again after a crash) and a replay that
committed twice read at once.

Which incarnation started a batch comes from the history: the ``batch_start`` events the
supervisor recorded as ``sut-event`` ops, the batch in their ``fields``
(:func:`sealcheck.rundir.names.event_fields`); no log is read. A run
stored before the history held the system's events shows its batches with that column "not
recorded".

And on the states of an output without bindings, whose export records in ``versions.json``
the batches each state follows (:mod:`sealcheck.rundir.states`): a row per state.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from sealcheck.rundir.files import Export
from sealcheck.rundir.names import SUT_EVENT, event_fields
from sealcheck.rundir.regular import read_text
from sealcheck.rundir.states import StateRecord, read_states

__all__ = ["NOT_RECORDED", "batch_rows", "started_by", "state_rows", "tables_of"]

#: the states the section on states lists (the rest are counted; ``versions.json`` has them)
MAX_STATES = 200

#: the "started by incarnation" cell of a run whose history holds no events of the system
NOT_RECORDED = "not recorded"


def started_by(ops: Iterable[dict[str, Any]]) -> dict[int, list[int]] | None:
    """Batch id -> the incarnations that started it (``batch_start`` events, in history
    order); None when the history holds no event of the system at all (a run stored before
    they were recorded)."""
    out: dict[int, list[int]] = defaultdict(list)
    recorded = False
    for op in ops:
        value = op.get("value")
        if op.get("f") != SUT_EVENT or not isinstance(value, dict):
            continue
        recorded = True
        batch, n = event_fields(value).get("batch"), value.get("incarnation")
        if value.get("event") == "batch_start" and type(batch) is int and type(n) is int:
            out[batch].append(n)
    return out if recorded else None


def _versions(run_dir: Path) -> dict[str, Any] | None:
    try:
        doc = json.loads(read_text(run_dir / Export.of(run_dir).versions, run_dir))
    except (OSError, ValueError):  # a FIFO is not opened: reading it never ends
        return None
    return doc if isinstance(doc, dict) else None


def batch_rows(
    run_dir: Path, ops: Iterable[dict[str, Any]] = ()
) -> tuple[list[list[Any]], dict[str, Any]] | None:
    """One row per batch (batch, planned, committed, versions per table, incarnations that
    started it, note) and summary counts (``ran_more_than_once`` None when the history holds no
    events of the system); None without ``export/versions.json``. ``ops``: the history's."""
    doc = _versions(run_dir)
    if doc is None or not isinstance(doc.get("tables"), dict):  # states only: no batch read
        return None
    tables: dict[str, dict[str, Any]] = doc["tables"]
    planned = set(doc.get("batches", {}).get("planned", []))
    committed = set(doc.get("batches", {}).get("committed", []))
    versions: dict[str, dict[int, list[int]]] = {t: defaultdict(list) for t in tables}
    for table, vs in tables.items():
        for v, meta in vs.items():
            if meta.get("batch") is not None:
                versions[table][int(meta["batch"])].append(int(v))
    found = started_by(ops)
    ran = found or {}
    every = sorted(planned | committed | {b for t in versions.values() for b in t} | set(ran))
    rows: list[list[Any]] = []
    counts: dict[str, Any] = {
        "batches": len(every),
        "ran_more_than_once": 0 if found is not None else None,
        "committed_twice": 0,
    }
    for b in every:
        notes = []
        if len(ran.get(b, [])) > 1:
            counts["ran_more_than_once"] += 1
            notes.append("replayed")
        if any(len(versions[t].get(b, [])) > 1 for t in versions):
            counts["committed_twice"] += 1
            notes.append("a table committed it twice")
        if b in planned and b not in committed:
            notes.append("planned, never committed by Spark")
        started = ", ".join(map(str, ran.get(b, []))) or "-"
        rows.append(
            [
                b,
                "yes" if b in planned else "no",
                "yes" if b in committed else "no",
                *[
                    ", ".join(map(str, sorted(versions[t].get(b, [])))) or "-"
                    for t in sorted(versions)
                ],
                started if found is not None else NOT_RECORDED,
                "; ".join(notes),
            ]
        )
    return rows, counts


def tables_of(run_dir: Path) -> list[str]:
    """The tables ``versions.json`` describes (column order of :func:`batch_rows`)."""
    doc = _versions(run_dir)
    return sorted(doc.get("tables", {})) if doc is not None else []


def state_rows(run_dir: Path) -> tuple[StateRecord, list[tuple[int, str]], int] | None:
    """For an export of states without bindings (:mod:`sealcheck.rundir.states`): its record,
    one row per state (the state, the batches it follows in words; at most
    :data:`MAX_STATES`) and how many more there are; None when the export records no states."""
    record = read_states(run_dir / Export.of(run_dir).versions, run_dir)
    if record is None:
        return None
    labels = record.labels()
    rows = [(s.state, labels.get(s.state, "-")) for s in record.states[:MAX_STATES]]
    return record, rows, max(0, len(record.states) - MAX_STATES)
