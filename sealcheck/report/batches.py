"""The report's section on micro-batches and table versions, for systems whose export writes
``persist/versions.json`` (the delta-streaming job): per batch, whether it was planned and
committed by Spark, which versions of each table belong to it, and which incarnations ran it —
so a replay (a batch run again after a crash) and a replay that committed twice read at once.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

from sealcheck.rundir.files import step_labels

__all__ = ["batch_rows", "step_labels", "tables_of"]

_BATCH_EVENT = re.compile(r'^\{"batch": (\d+), "event": "batch_start"')
_INCARNATION = re.compile(r"^pipeline-(\d+)\.log$")


def _ran_in(logs: Path) -> dict[int, list[int]]:
    """Batch id -> the incarnations whose log says they started it."""
    out: dict[int, list[int]] = defaultdict(list)
    for log in sorted(logs.glob("pipeline-*.log")):
        m = _INCARNATION.match(log.name)
        if m is None:
            continue
        for line in log.read_text(errors="replace").splitlines():
            if (b := _BATCH_EVENT.match(line)) is not None:
                out[int(b[1])].append(int(m[1]))
    return out


def batch_rows(run_dir: Path) -> tuple[list[list[Any]], dict[str, int]] | None:
    """One row per batch (batch, planned, committed, versions per table, incarnations that
    started it, note) and summary counts; None without ``persist/versions.json``."""
    try:
        doc = json.loads((run_dir / "persist" / "versions.json").read_text())
    except (OSError, ValueError):
        return None
    tables: dict[str, dict[str, Any]] = doc.get("tables", {})
    planned = set(doc.get("batches", {}).get("planned", []))
    committed = set(doc.get("batches", {}).get("committed", []))
    versions: dict[str, dict[int, list[int]]] = {t: defaultdict(list) for t in tables}
    for table, vs in tables.items():
        for v, meta in vs.items():
            if meta.get("batch") is not None:
                versions[table][int(meta["batch"])].append(int(v))
    ran = _ran_in(run_dir / "logs")
    every = sorted(planned | committed | {b for t in versions.values() for b in t} | set(ran))
    rows: list[list[Any]] = []
    counts = {"batches": len(every), "ran_more_than_once": 0, "committed_twice": 0}
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
        rows.append(
            [
                b,
                "yes" if b in planned else "no",
                "yes" if b in committed else "no",
                *[
                    ", ".join(map(str, sorted(versions[t].get(b, [])))) or "-"
                    for t in sorted(versions)
                ],
                ", ".join(map(str, ran.get(b, []))) or "-",
                "; ".join(notes),
            ]
        )
    return rows, counts


def tables_of(run_dir: Path) -> list[str]:
    """The tables ``versions.json`` describes (column order of :func:`batch_rows`)."""
    try:
        doc = json.loads((run_dir / "persist" / "versions.json").read_text())
    except (OSError, ValueError):
        return []
    return sorted(doc.get("tables", {}))
