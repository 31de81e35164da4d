"""The delta-streaming job's output in the checkers' format, read independently of Spark:
Delta's change data feed through ``deltalake`` (delta-rs), versions mapped to micro-batches by
the transaction identifiers in each table's log, bindings from the checkpoint's offset log.

* ``bindings``: for each ``offsets/N``, the partitions whose end offset moved, as upserts of
  ``(partition, next offset)`` at ``ts = N`` (as the pipeline writes them).
* ``data`` / ``errors``: every change-feed row of a version as ``(key, value, ts = the
  version's batch, diff)``: ``insert`` and ``update_postimage`` +1, ``delete`` and
  ``update_preimage`` -1. A version with changes but no batch id cannot be judged: the export
  fails naming it.
* ``export/versions.json``: per table, every version with its batch, operation and change
  count, and per batch whether it was planned (``offsets/N``) and committed (``commits/N``) —
  what the report shows of batches and versions.
* ``export/asof.parquet``: a second path that does not trust the change feed — the tables
  read *as of* the last version of a sample of batches (``collection, ts, key, value``), which
  the ``as_of`` checker compares with the model.

Run as ``python -m sealcheck.systems.delta_streaming.export JOB_DIR RUN_DIR [TOPIC]`` (a child
process:
delta-rs's runtime may abort the interpreter at exit).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from sealcheck.rundir.files import ASOF, VERSIONS, write_export
from sealcheck.systems.delta_streaming.layout import (
    TABLES,
    checkpoint_batches,
    commit,
    offsets,
    uppers,
    versions,
)

#: how many batches the as-of path reads (evenly spread, the last one always)
ASOF_SAMPLES = 12
_DIFF = {"insert": 1, "update_postimage": 1, "delete": -1, "update_preimage": -1}


class ExportError(RuntimeError):
    """The job's directory holds something the checkers' format cannot express."""


def bindings_rows(root: Path, topic: str | None) -> list[tuple[Any, ...]]:
    """``bindings`` updates from the offset log."""
    rows: list[tuple[Any, ...]] = []
    old: dict[int, int] = {}
    for batch in checkpoint_batches(root):
        new = offsets(root, batch, topic)
        for p in sorted(new):
            if old.get(p) == new[p]:
                continue
            key = str(p).encode()
            if p in old:
                rows.append(("bindings", key, str(old[p]).encode(), batch, -1))
            rows.append(("bindings", key, str(new[p]).encode(), batch, 1))
        old = {**old, **new}
    return rows


def batch_of_versions(table: Path) -> dict[int, dict[str, Any]]:
    """Every version of ``table`` with its batch, operation and transaction identifier."""
    out: dict[int, dict[str, Any]] = {}
    for v in versions(table):
        c = commit(table, v)
        out[v] = {
            "batch": c.batch,
            "operation": c.operation,
            "txn": None if c.txn_version is None else {"app": c.txn_app, "version": c.txn_version},
            "user_metadata": c.user_metadata,
        }
    return out


def _changes(table: Path) -> pa.Table:
    import deltalake

    if not versions(table):
        return pa.table({"key": [], "value": [], "_change_type": [], "_commit_version": []})
    feed = deltalake.DeltaTable(str(table)).load_cdf(starting_version=0)
    return pa.table(feed.read_all()).select(["key", "value", "_change_type", "_commit_version"])


def table_rows(
    name: str, table: Path, meta: dict[int, dict[str, Any]]
) -> Iterator[list[tuple[Any, ...]]]:
    """The change feed of ``table`` as ``(collection, key, value, ts, diff)`` batches."""
    changes = _changes(table)
    counts: dict[int, int] = {}
    for chunk in changes.to_batches(max_chunksize=100_000):
        rows: list[tuple[Any, ...]] = []
        d = chunk.to_pydict()
        for key, value, kind, version in zip(
            d["key"], d["value"], d["_change_type"], d["_commit_version"], strict=True
        ):
            batch = meta.get(int(version), {}).get("batch")
            if batch is None:
                raise ExportError(
                    f"{table} version {version} changed rows but carries no batch id (no txn "
                    "action, no userMetadata batch=<id>): it was not written by the job's "
                    "foreachBatch, so no step can be assigned to it"
                )
            counts[int(version)] = counts.get(int(version), 0) + 1
            enc = (
                key.encode() if key is not None else None,
                None if value is None else value.encode(),
            )
            rows.append((name, enc[0], enc[1], int(batch), _DIFF[kind]))
        yield rows
    for v, n in counts.items():
        meta[v]["changes"] = n


def asof_rows(table: Path, name: str, meta: dict[int, dict[str, Any]]) -> list[tuple[Any, ...]]:
    """The table as of the last version of each sampled batch: ``(collection, ts, key, value)``."""
    import deltalake

    last: dict[int, int] = {}
    for v, m in sorted(meta.items()):
        if m["batch"] is not None:
            last[m["batch"]] = v
    batches = sorted(last)
    if not batches:
        return []
    step = max(1, len(batches) // ASOF_SAMPLES)
    sample = sorted({*batches[::step], batches[-1]})
    rows: list[tuple[Any, ...]] = []
    for batch in sample:
        snap = deltalake.DeltaTable(str(table), version=last[batch]).to_pyarrow_table()
        for key, value in zip(snap["key"].to_pylist(), snap["value"].to_pylist(), strict=True):
            rows.append((name, batch, key.encode(), value.encode()))
    return rows


def export(root: Path, run_dir: Path, topic: str | None = None) -> None:
    """Write ``updates.parquet``, ``frontiers.json``, ``versions.json`` and ``asof.parquet``."""
    planned, committed = checkpoint_batches(root), checkpoint_batches(root, "commits")
    meta = {name: batch_of_versions(root / name) for name in TABLES}
    frontiers = {name: {"upper": u, "since": 0} for name, u in (uppers(root) or {}).items()}

    def batches() -> Iterator[Sequence[tuple[Any, ...]]]:
        rows = bindings_rows(root, topic)
        if rows:
            yield rows
        for name in TABLES:
            for chunk in table_rows(name, root / name, meta[name]):
                if chunk:
                    yield chunk

    write_export(run_dir, frontiers, batches())
    asof = [r for name in TABLES for r in asof_rows(root / name, name, meta[name])]
    schema = pa.schema(
        [
            ("collection", pa.string()),
            ("ts", pa.int64()),
            ("key", pa.binary()),
            ("value", pa.binary()),
        ]
    )
    cols: list[Any] = list(zip(*asof, strict=True)) if asof else [[], [], [], []]
    pq.write_table(pa.Table.from_arrays([pa.array(c) for c in cols], schema=schema), run_dir / ASOF)
    doc = {
        "tables": {n: {str(v): m for v, m in meta[n].items()} for n in TABLES},
        "batches": {"planned": planned, "committed": committed},
    }
    (run_dir / VERSIONS).write_text(json.dumps(doc, indent=1, sort_keys=True))


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m sealcheck.systems.delta_streaming.export JOB_DIR RUN_DIR [TOPIC]``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) not in (2, 3):
        print(
            "usage: python -m sealcheck.systems.delta_streaming.export JOB_DIR RUN_DIR [TOPIC]",
            file=sys.stderr,
        )
        return 254
    try:
        export(Path(args[0]), Path(args[1]), args[2] if len(args) == 3 else None)
    except ExportError as exc:
        print(f"export: {exc}", file=sys.stderr)
        return 2
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    import os

    code = main()
    sys.stderr.flush()
    os._exit(code)  # skip delta-rs's runtime teardown, which may abort the interpreter
