"""The files of a run whose system's versions write rows of different shapes
(:mod:`sealcheck.core.version_effects`): written by the harness after the topic dump and the
export, so the checkers judge the columns every version writes as any run's, and the
*versioned columns* (those not every version's rows hold) on their own (the ``versions``
checker), without importing the system.

* ``effects.parquet`` (:mod:`sealcheck.rundir.effects`): the first version's effects, its rows
  without the versioned columns — every version's effects must be these, or the mapping
  fails naming the first record where two versions differ elsewhere;
* ``effects-versions.parquet``: per record and version, the versioned columns of the row that
  version writes, as the last version reads it (``row, partition, offset, version, key,
  value``; ``value`` JSON of the versioned columns); its schema's metadata lists them;
* ``export/versioned.parquet``: the export's ``data`` updates split in two — ``updates.parquet``
  keeps the row without the versioned columns (updates that changed only those cancel out and
  go), this file holds their own updates (``key, value, ts, diff``).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from sealcheck.core.effects import Delete, Effect, EffectError, Upsert, encode_key, encode_row
from sealcheck.core.version_effects import VersionEffects
from sealcheck.rundir.effects import apply_mapping, record_batches, write_effects
from sealcheck.rundir.files import ASOF, UPDATES, VERSIONED
from sealcheck.rundir.runid import stamp_schema

__all__ = ["COLUMNS_KEY", "SCHEMA", "split_export", "write_version_effects"]

SCHEMA = pa.schema(
    [
        ("row", pa.int64()),
        ("partition", pa.int64()),
        ("offset", pa.int64()),
        ("version", pa.string()),
        ("key", pa.binary()),
        ("value", pa.binary()),
    ]
)
#: the schema metadata of ``effects-versions.parquet`` that lists the versioned columns (JSON)
COLUMNS_KEY = b"sealcheck.versioned_columns"
_VERSIONED_SCHEMA = pa.schema(
    [("key", pa.binary()), ("value", pa.binary()), ("ts", pa.int64()), ("diff", pa.int64())]
)


def _upsert(effects: tuple[Effect, ...]) -> Upsert | None:
    """The record's upsert into ``data`` when its row is a mapping of columns (else None)."""
    for e in effects:
        if isinstance(e, Upsert) and e.table == "data" and isinstance(e.row, dict):
            return e
    return None


def versioned_columns(topic: Path, versions: VersionEffects) -> tuple[str, ...]:
    """The columns of ``data`` rows that some record's rows do not all hold, across versions."""
    found: set[str] = set()
    for batch in record_batches(topic):
        for rec in batch:
            ups = [_upsert(apply_mapping(m, rec)) for _, m in versions.mappings]
            shapes = [set(u.row) for u in ups if u is not None and isinstance(u.row, dict)]
            if shapes:
                found |= set.union(*shapes) - set.intersection(*shapes)
    return tuple(sorted(found))


def _shared(effects: tuple[Effect, ...], columns: tuple[str, ...]) -> tuple[Effect, ...]:
    """``effects`` with the versioned ``columns`` left out of their ``data`` rows."""
    out: list[Effect] = []
    for e in effects:
        if isinstance(e, Upsert) and e.table == "data" and isinstance(e.row, dict):
            e = Upsert(e.key, {c: v for c, v in e.row.items() if c not in columns}, e.table)
        out.append(e)
    return tuple(out)


def _plain(effects: tuple[Effect, ...]) -> list[tuple[str, str, bytes, bytes | None]]:
    """Effects as comparable tuples: table, kind, key, row."""
    return [
        (
            e.table,
            type(e).__name__,
            encode_key(e.key),
            None if isinstance(e, Delete) else encode_row(e.row),
        )
        for e in effects
    ]


def write_version_effects(
    topic: Path, versions: VersionEffects, effects_out: Path, versions_out: Path
) -> tuple[str, ...]:
    """Write ``effects.parquet`` (the first version's effects without the versioned columns)
    and ``effects-versions.parquet``; the versioned columns (empty: the versions map records
    alike, and only ``effects.parquet`` is written). An :class:`EffectError` names the first
    record two versions map differently outside the versioned columns, or the mapping's
    failure, and nothing of ``versions_out`` is written then."""
    columns = versioned_columns(topic, versions)
    first_name, first = versions.mappings[0]
    write_effects(topic, lambda rec: _shared(apply_mapping(first, rec), columns), effects_out)
    if not columns:
        return columns
    meta = {COLUMNS_KEY: json.dumps(list(columns)).encode()}
    schema = stamp_schema(SCHEMA, versions_out.parent).with_metadata(
        {**(stamp_schema(SCHEMA, versions_out.parent).metadata or {}), **meta}
    )
    tmp = versions_out.with_suffix(".parquet.tmp")
    row = 0
    try:
        with pq.ParquetWriter(tmp, schema) as writer:
            for batch in record_batches(topic):
                cols: dict[str, list[object]] = {n: [] for n in SCHEMA.names}
                for rec in batch:
                    all_effects = [(v, apply_mapping(m, rec)) for v, m in versions.mappings]
                    want = _plain(_shared(all_effects[0][1], columns))
                    for v, effects in all_effects:
                        if _plain(_shared(effects, columns)) != want:
                            raise EffectError(
                                f"record partition {rec.partition} offset {rec.offset}: "
                                f"{v}'s effect differs from {first_name}'s outside the columns "
                                f"the versions do not all write ({', '.join(columns)}): "
                                "versions must agree on every other column, key and table"
                            )
                        up = _upsert(effects)
                        if up is None or not isinstance(up.row, dict):
                            continue
                        moved = versions.migrated(up.row, v, columns)
                        cols["row"].append(row)
                        cols["partition"].append(rec.partition)
                        cols["offset"].append(rec.offset)
                        cols["version"].append(v)
                        cols["key"].append(encode_key(up.key))
                        cols["value"].append(encode_row({c: moved.get(c) for c in columns}))
                    row += 1
                writer.write_table(pa.table(cols, schema=SCHEMA))
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    tmp.replace(versions_out)
    return columns


def split_export(run_dir: Path, columns: tuple[str, ...]) -> None:
    """Split the versioned ``columns`` off the ``data`` rows of the export's
    ``updates.parquet`` (and ``asof.parquet``, when there is one) into
    ``export/versioned.parquet`` (the module's docstring). A row that is not a JSON object is
    left as it is (and has no versioned part)."""
    updates = pq.read_table(run_dir / UPDATES)
    kept: Counter[tuple[str, bytes, bytes | None, int]] = Counter()
    split: Counter[tuple[bytes, bytes, int]] = Counter()
    order: list[tuple[str, bytes, bytes | None, int]] = []
    names = ("collection", "key", "value", "ts", "diff")
    for c, k, v, ts, diff in zip(*(updates.column(n).to_pylist() for n in names), strict=True):
        if c == "data" and v is not None:
            shared, extra = _split(v, columns)
            if extra is not None:
                split[(k, extra, ts)] += diff
            v = shared
        entry = (c, k, v, ts)
        if entry not in kept:
            order.append(entry)
        kept[entry] += diff
    rows = [(*e, kept[e]) for e in order if kept[e] != 0]
    _write(run_dir / UPDATES, updates.schema, list(zip(*rows, strict=True)) if rows else None)
    out = [(k, v, ts, d) for (k, v, ts), d in split.items() if d != 0]
    schema = stamp_schema(_VERSIONED_SCHEMA, run_dir)
    _write(run_dir / VERSIONED, schema, list(zip(*out, strict=True)) if out else None)
    if (run_dir / ASOF).exists():
        asof = pq.read_table(run_dir / ASOF)
        pairs = zip(
            asof.column("collection").to_pylist(), asof.column("value").to_pylist(), strict=True
        )
        values = [_split(v, columns)[0] if c == "data" and v is not None else v for c, v in pairs]
        asof = asof.set_column(asof.schema.get_field_index("value"), "value", pa.array(values))
        pq.write_table(asof, run_dir / ASOF)


def _split(value: bytes, columns: tuple[str, ...]) -> tuple[bytes, bytes | None]:
    """A row's value without the versioned columns, and theirs (None: not a JSON object)."""
    try:
        row = orjson.loads(value)
    except orjson.JSONDecodeError:
        return value, None
    if not isinstance(row, dict):
        return value, None
    shared = {c: v for c, v in row.items() if c not in columns}
    extra = {c: row[c] for c in columns if c in row}
    return encode_row(shared), encode_row(extra)


def _write(path: Path, schema: pa.Schema, cols: list[Any] | None) -> None:
    """``cols`` (None: no rows) as ``path`` with ``schema``, replaced atomically."""
    arrays = [pa.array(c, type=f.type) for c, f in zip(cols, schema, strict=True)] if cols else None
    table = (
        pa.Table.from_arrays(arrays, schema=schema) if arrays is not None else schema.empty_table()
    )
    tmp = path.with_suffix(".parquet.tmp")
    pq.write_table(table, tmp)
    tmp.replace(path)
