"""A :class:`~sealcheck.systems.outputs.delta.DeltaOutput` in the checkers' format, read
independently of Spark: Delta's change data feed through ``deltalake`` (delta-rs), versions
mapped to micro-batches (:meth:`sealcheck.systems.outputs.delta_log.Commit.batch`), bindings
from the checkpoint's offset log.

* ``bindings``: for each ``offsets/N``, the partitions whose end offset moved, as upserts of
  ``(partition, next offset)`` at ``ts = N``.
* ``data`` / ``errors``: every change-feed row of a version as ``(key, value, ts = the
  version's batch, diff)``: ``insert`` and ``update_postimage`` +1, ``delete`` and
  ``update_preimage`` -1 — or, for a table without a change data feed (or one delta-rs
  cannot read: it refuses text that is not UTF-8), what differs between the snapshots of each
  version and the one before (time travel); key and value encoded as the system's mapping
  encodes them (:func:`sealcheck.core.effects.encode_key`,
  :func:`~sealcheck.core.effects.encode_row`), text that is not UTF-8 read with U+FFFD
  replacement (:func:`sealcheck.systems.outputs.rows.text`). A
  version with changes but no batch cannot be judged: the export fails naming it.
* ``export/versions.json``: per table, every version with its batch, operation and change
  count, and per batch whether it was planned (``offsets/N``) and committed (``commits/N``) —
  what the report shows of batches and versions.
* ``export/asof.parquet``: a second path that does not trust the change feed — the tables
  read *as of* the last version of a sample of batches (``collection, ts, key, value``), which
  the ``as_of`` checker compares with the model.

**The tables alone** (no checkpoint: :func:`export_tables`): no ``bindings`` (``"kept":
false``), no ``asof.parquet``, and ``versions.json`` holds only the states (each with its
table versions and its batch, :func:`state_record`: :mod:`sealcheck.rundir.states`); ``ts``
is the batch the commits name when every changing version names one and one writer
(``txnAppId``) wrote them all — a state per batch, both tables together — and otherwise the
version's place among both tables' changing versions in commit order: a state per commit,
judged both tables together when distinct writers tagged them (two queries: nothing makes the
tables move together), each table alone when commits are untagged (``"aligned": false`` on
``errors``: a batch's two commits cannot be told apart from two batches).

Run as ``python -m sealcheck.systems.outputs.delta_export SPEC_JSON RUN_DIR`` (a child
process: delta-rs's runtime may abort the interpreter at exit).
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from sealcheck.rundir.files import ASOF, VERSIONS, write_export
from sealcheck.rundir.runid import stamp_json, stamp_schema
from sealcheck.rundir.states import BATCHES, COMMITS, StateBatches, StateRecord, write_states
from sealcheck.systems.outputs.delta import DeltaOutput
from sealcheck.systems.outputs.delta_log import Clock, checkpoint_batches, commit, offsets, versions
from sealcheck.systems.outputs.rows import Encoder, arrow_rows

#: how many batches the as-of path reads (evenly spread, the last one always)
ASOF_SAMPLES = 12
_DIFF = {"insert": 1, "update_postimage": 1, "delete": -1, "update_preimage": -1}
_CDF = ("_change_type", "_commit_version", "_commit_timestamp")
_TABLES = ("data", "errors")


class ExportError(RuntimeError):
    """The output holds something the checkers' format cannot express."""


def bindings_rows(checkpoint: Path, topic: str | None) -> list[tuple[Any, ...]]:
    """``bindings`` updates from the offset log."""
    rows: list[tuple[Any, ...]] = []
    old: dict[int, int] = {}
    for batch in checkpoint_batches(checkpoint):
        new = offsets(checkpoint, batch, topic)
        for p in sorted(new):
            if old.get(p) == new[p]:
                continue
            key = str(p).encode()
            if p in old:
                rows.append(("bindings", key, str(old[p]).encode(), batch, -1))
            rows.append(("bindings", key, str(new[p]).encode(), batch, 1))
        old = {**old, **new}
    return rows


def batch_of_versions(table: Path, checkpoint: Path | None) -> dict[int, dict[str, Any]]:
    """Every version of ``table`` with its batch (and how it was told: by its tag, or by the
    checkpoint's clock), operation, transaction identifier and commit time."""
    clock = Clock(checkpoint) if checkpoint is not None else None
    out: dict[int, dict[str, Any]] = {}
    for v in versions(table):
        c = commit(table, v)
        batch = c.batch(clock)
        told = "tag" if c.tagged_batch is not None else "clock" if batch is not None else None
        out[v] = {
            "batch": batch,
            "batch_by": told,
            "operation": c.operation,
            "txn": None if c.txn_version is None else {"app": c.txn_app, "version": c.txn_version},
            "user_metadata": c.user_metadata,
            "timestamp": c.timestamp,
        }
    return out


def _changes(table: Path) -> pa.Table:
    import deltalake

    feed = deltalake.DeltaTable(str(table)).load_cdf(starting_version=0)
    return pa.table(feed.read_all())


def _has_feed(table: Path) -> bool:
    """Whether the table keeps a change data feed (``delta.enableChangeDataFeed``)."""
    import deltalake

    conf = deltalake.DeltaTable(str(table)).metadata().configuration
    return str(conf.get("delta.enableChangeDataFeed", "false")).lower() == "true"


def _batch(table: Path, version: int, meta: dict[int, dict[str, Any]]) -> int:
    batch = meta.get(version, {}).get("batch")
    if batch is None:
        raise ExportError(
            f"{table} version {version} changed rows but belongs to no micro-batch (no "
            "txn action, no userMetadata batch=<id>, committed before the query planned "
            "its first batch): it was not written by the query, so no step can be "
            "assigned to it"
        )
    return int(batch)


def table_rows(
    name: str,
    table: Path,
    meta: dict[int, dict[str, Any]],
    encode: Encoder,
    ts_of: Callable[[int], int] | None = None,
) -> Iterator[list[tuple[Any, ...]]]:
    """The changes of ``table`` as ``(collection, key, value, ts, diff)`` batches: from its
    change data feed, or, for a table without one, from the difference of each version's
    snapshot to the one before (delta-rs time travel). ``ts_of``: a version's ``ts`` (None:
    its batch)."""
    if not versions(table):
        return
    if ts_of is None:
        ts_of = lambda v: _batch(table, v, meta)  # noqa: E731
    if not _has_feed(table):
        yield from _snapshot_rows(name, table, meta, encode, ts_of)
        return
    try:
        feed = _changes(table)
    except Exception:
        # delta-rs's Parquet reader refuses text that is not UTF-8 (with a bare Exception, so
        # the cause cannot be told by type): the snapshots, read without that check, say the
        # same changes
        yield from _snapshot_rows(name, table, meta, encode, ts_of)
        return
    counts: dict[int, int] = {}
    for chunk in feed.to_batches(max_chunksize=100_000):
        rows: list[tuple[Any, ...]] = []
        for row in arrow_rows(chunk):
            version = int(row["_commit_version"])
            batch = ts_of(version)
            counts[version] = counts.get(version, 0) + 1
            key, value = encode(row)
            rows.append((name, key, value, batch, _DIFF[row["_change_type"]]))
        yield rows
    for v, n in counts.items():
        meta[v]["changes"] = n


def _snapshot_rows(
    name: str,
    table: Path,
    meta: dict[int, dict[str, Any]],
    encode: Encoder,
    ts_of: Callable[[int], int],
) -> Iterator[list[tuple[Any, ...]]]:
    """Version by version, what changed from the snapshot before (as a multiset of rows, so
    a row written twice is held twice)."""
    import deltalake

    before: Counter[tuple[bytes, bytes]] = Counter()
    for v in sorted(meta):
        snap = deltalake.DeltaTable(str(table), version=v).to_pyarrow_table()
        now = Counter(encode(r) for r in arrow_rows(snap))
        gone, came = before - now, now - before
        if gone or came:
            batch = ts_of(v)
            rows = [(name, k, val, batch, -n) for (k, val), n in sorted(gone.items())]
            rows += [(name, k, val, batch, n) for (k, val), n in sorted(came.items())]
            meta[v]["changes"] = len(rows)
            yield rows
        before = now


def asof_rows(
    table: Path, name: str, meta: dict[int, dict[str, Any]], encode: Encoder
) -> list[tuple[Any, ...]]:
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
        rows += [(name, batch, *encode(r)) for r in arrow_rows(snap)]
    return rows


def _encoders(out: DeltaOutput) -> dict[str, Encoder]:
    return {c: out.row_shape.encoder(c, _CDF) for c in ("data", "errors")}


def by_batches(meta: dict[str, dict[int, dict[str, Any]]], changed: set[tuple[str, int]]) -> bool:
    """Whether the tables' states are the batches their commits name: every changing version
    names one and one writer (``txnAppId``) wrote them all."""
    info = [meta[t][v] for t, v in changed]
    writers = {(m["txn"] or {}).get("app") for m in info}
    return all(m["batch"] is not None for m in info) and len(writers) <= 1


def state_record(
    meta: dict[str, dict[int, dict[str, Any]]], ts: dict[tuple[str, int], int], batches: bool
) -> StateRecord:
    """The tables' states as :mod:`sealcheck.rundir.states` records them: each with its
    versions and the batch its commits name (``batches``: the states are those batches)."""
    versions: dict[int, list[tuple[str, int]]] = {}
    for tv, state in sorted(ts.items()):
        versions.setdefault(state, []).append(tv)
    out = []
    for state, tvs in sorted(versions.items()):
        named = {meta[t][v]["batch"] for t, v in tvs}
        batch = named.pop() if len(named) == 1 else None
        words = tuple(f"{t} v{v}" for t, v in tvs)
        out.append(StateBatches(state, batch, batch, words))
    return StateRecord(BATCHES if batches else COMMITS, False, tuple(out))


def states_of(
    meta: dict[str, dict[int, dict[str, Any]]], changed: set[tuple[str, int]], batched: bool
) -> tuple[dict[tuple[str, int], int], bool]:
    """For the tables alone: each changing ``(table, version)``'s ``ts`` — its batch when
    ``batched`` (:func:`by_batches`) —, and whether the two tables' states are judged together
    (the module's docstring says how)."""
    info = {tv: meta[tv[0]][tv[1]] for tv in changed}
    tagged = all(m["batch"] is not None for m in info.values())
    if batched:
        return {tv: int(m["batch"]) for tv, m in info.items()}, True
    for (table, version), m in sorted(info.items()):
        if m["timestamp"] is None:
            raise ExportError(
                f"{table} version {version} names no batch and no commit time: its place "
                "among the tables' states cannot be told"
            )
    order = sorted(info, key=lambda tv: (info[tv]["timestamp"], tv))
    return {tv: i for i, tv in enumerate(order)}, tagged


def export_tables(out: DeltaOutput, run_dir: Path) -> None:
    """The tables alone (no checkpoint): ``updates.parquet`` and ``frontiers.json`` with
    ``bindings`` not kept (the module's docstring)."""
    tables, encoders = out.tables(), _encoders(out)
    meta = {n: batch_of_versions(t, None) for n, (t, _) in tables.items()}
    rows = {
        n: [r for chunk in table_rows(n, t, meta[n], encoders[n], lambda v: v) for r in chunk]
        for n, (t, _) in tables.items()
    }
    changed = {(n, int(r[3])) for n, rs in rows.items() for r in rs}
    batched = by_batches(meta, changed)
    ts, aligned = states_of(meta, changed, batched)
    record = state_record(meta, ts, batched)
    updates = [(r[0], r[1], r[2], ts[(n, int(r[3]))], r[4]) for n, rs in rows.items() for r in rs]
    # at least what the harness saw during the run (each table's version count), so the
    # export's upper is never below one observed
    upper = max([max(ts.values(), default=-1) + 1, *(len(versions(t)) for t, _ in tables.values())])
    frontiers: dict[str, dict[str, Any]] = {c: {"upper": upper, "since": 0} for c in _TABLES}
    frontiers["bindings"] = {"upper": 0, "since": 0, "kept": False}
    if not aligned:
        frontiers["errors"]["aligned"] = False
    write_export(run_dir, frontiers, [updates] if updates else [])
    write_states(run_dir / VERSIONS, record, run_dir)


def export(out: DeltaOutput, run_dir: Path) -> None:
    """Write ``updates.parquet``, ``frontiers.json``, ``versions.json`` and ``asof.parquet``
    (the tables alone: :func:`export_tables`)."""
    if out.checkpoint is None:
        export_tables(out, run_dir)
        return
    checkpoint = out.checkpoint
    tables = out.tables()
    meta = {n: batch_of_versions(t, cp or checkpoint) for n, (t, cp) in tables.items()}
    encoders = _encoders(out)
    frontiers = {name: {"upper": u, "since": 0} for name, u in (out.uppers() or {}).items()}

    def batches() -> Iterator[Sequence[tuple[Any, ...]]]:
        rows = bindings_rows(checkpoint, out.topic)
        if rows:
            yield rows
        for name, (table, _) in tables.items():
            for chunk in table_rows(name, table, meta[name], encoders[name]):
                if chunk:
                    yield chunk

    write_export(run_dir, frontiers, batches())
    asof = [
        r
        for name, (table, _) in tables.items()
        for r in asof_rows(table, name, meta[name], encoders[name])
    ]
    names = (("collection", pa.string()), ("ts", pa.int64()))
    schema = pa.schema([*names, ("key", pa.binary()), ("value", pa.binary())])
    schema = stamp_schema(schema, run_dir)  # the run's id (test.json's)
    cols: list[Any] = list(zip(*asof, strict=True)) if asof else [[], [], [], []]
    pq.write_table(pa.Table.from_arrays([pa.array(c) for c in cols], schema=schema), run_dir / ASOF)
    doc = {
        "tables": {n: {str(v): m for v, m in meta[n].items()} for n in tables},
        "batches": {
            "planned": checkpoint_batches(checkpoint),
            "committed": checkpoint_batches(checkpoint, "commits"),
        },
    }
    (run_dir / VERSIONS).write_text(json.dumps(stamp_json(doc, run_dir), indent=1, sort_keys=True))


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m sealcheck.systems.outputs.delta_export SPEC_JSON RUN_DIR``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2:
        usage = "usage: python -m sealcheck.systems.outputs.delta_export SPEC_JSON RUN_DIR"
        print(usage, file=sys.stderr)
        return 254
    try:
        export(DeltaOutput.from_json(json.loads(args[0])), Path(args[1]))
    except (ExportError, ValueError, KeyError) as exc:
        print(f"export: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    import os

    code = main()
    sys.stderr.flush()
    os._exit(code)  # skip delta-rs's runtime teardown, which may abort the interpreter
