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
from collections.abc import Iterable
from pathlib import Path

import orjson
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from sealcheck.core.effects import (
    Delete,
    Effect,
    EffectError,
    EffectMapping,
    Record,
    Upsert,
    encode_key,
    encode_row,
    trimmed,
)
from sealcheck.core.version_effects import VersionEffects
from sealcheck.rundir.effects import EFFECTS, apply_mapping, record_batches, write_effects
from sealcheck.rundir.files import ASOF, TOPIC, UPDATES, VERSION_EFFECTS, VERSIONED
from sealcheck.rundir.runid import stamp_schema

__all__ = [
    "COLUMNS_KEY",
    "HELD_KEY",
    "SCHEMA",
    "VERSIONED_SCHEMA",
    "check_versions",
    "held_columns",
    "split_export",
    "write_expected",
    "write_version_effects",
]

SCHEMA = pa.schema(
    [
        ("row", pa.int64()),
        ("partition", pa.int64()),
        ("offset", pa.int64()),
        ("version", pa.string()),
        ("to", pa.string()),
        ("key", pa.binary()),
        ("value", pa.binary()),
    ]
)
#: the schema metadata of ``effects-versions.parquet`` that lists the versioned columns (JSON)
COLUMNS_KEY = b"sealcheck.versioned_columns"
#: the schema metadata of ``export/versioned.parquet`` that lists the versioned columns some
#: row of the export holds (JSON): one no row holds was never read (``exclude`` names it?)
HELD_KEY = b"sealcheck.versioned_held"
_SORTED = orjson.OPT_SORT_KEYS
#: ``export/versioned.parquet``: the versioned columns' own updates
VERSIONED_SCHEMA = pa.schema(
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
    return _columns_of((rec for batch in record_batches(topic) for rec in batch), versions)


def _columns_of(records: Iterable[Record], versions: VersionEffects) -> tuple[str, ...]:
    """:func:`versioned_columns` of ``records``."""
    found: set[str] = set()
    for rec in records:
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


def check_versions(records: Iterable[Record], versions: VersionEffects) -> int:
    """What :func:`write_version_effects` checks, on ``records`` (a sample, before the run):
    the versions agree outside the columns they do not all write, and ``migrate`` takes every
    earlier version's row (:class:`EffectError` naming the first record that fails); how many
    records were tried."""
    held = list(records)
    columns = _columns_of(held, versions)
    for rec in held:
        _values(rec, versions, columns, versions.names[0])
    return len(held)


def write_version_effects(
    topic: Path, versions: VersionEffects, effects_out: Path, versions_out: Path
) -> tuple[str, ...]:
    """Write ``effects.parquet`` (the first version's effects without the versioned columns)
    and ``effects-versions.parquet``; the versioned columns (empty: every version maps
    records alike, and only ``effects.parquet`` is written). An :class:`EffectError` names
    the first record two versions map differently outside the versioned columns, or whose
    mapping or ``migrate`` fails, and nothing of ``versions_out`` is written then."""
    columns = versioned_columns(topic, versions)
    first_name, first = versions.mappings[0]
    write_effects(topic, lambda rec: _shared(apply_mapping(first, rec), columns), effects_out)
    meta = {COLUMNS_KEY: json.dumps(list(columns)).encode()}
    stamped = stamp_schema(SCHEMA, versions_out.parent)
    schema = stamped.with_metadata({**(stamped.metadata or {}), **meta})
    tmp = versions_out.with_suffix(".parquet.tmp")
    row = 0
    try:
        with pq.ParquetWriter(tmp, schema) as writer:
            for batch in record_batches(topic):
                cols: dict[str, list[object]] = {n: [] for n in SCHEMA.names}
                for rec in batch:
                    for v, to, key, value in _values(rec, versions, columns, first_name):
                        cols["row"].append(row)
                        cols["partition"].append(rec.partition)
                        cols["offset"].append(rec.offset)
                        cols["version"].append(v)
                        cols["to"].append(to)
                        cols["key"].append(key)
                        cols["value"].append(value)
                    row += 1
                if columns:
                    writer.write_table(pa.table(cols, schema=SCHEMA))
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if columns:
        tmp.replace(versions_out)
    else:  # checked only: the versions agree, and write rows of one shape
        tmp.unlink()
    return columns


def _values(
    rec: Record, versions: VersionEffects, columns: tuple[str, ...], first: str
) -> list[tuple[str, str, bytes, bytes]]:
    """For one record: per version that writes a row of ``data`` for it and each version at
    or after it, ``(version, to, key, value)``: the versioned ``columns`` of its row as ``to``
    reads it. Checks the versions agree outside ``columns`` (:class:`EffectError`)."""
    where = f"record partition {rec.partition} offset {rec.offset}"
    each = [(v, apply_mapping(m, rec)) for v, m in versions.mappings]
    want = _plain(_shared(each[0][1], columns))
    names = versions.names
    out = []
    for v, effects in each:
        if _plain(_shared(effects, columns)) != want:
            outside = f" outside the columns they do not all write ({', '.join(columns)})"
            raise EffectError(
                f"{where}: {v}'s effect differs from {first}'s{outside if columns else ''}: "
                "versions must map a record to the same keys, tables and values, but for "
                "columns a version adds (docs/your-own-job.md, section 14)"
            )
        up = _upsert(effects)
        if up is None or not isinstance(up.row, dict) or not columns:
            continue
        for to in names[names.index(v) :]:
            try:
                moved = versions.migrated(up.row, v, to, columns)
            except Exception as exc:  # the user's migrate: say where, keep its words
                raise EffectError(
                    f"migrate raised on {v}'s row of {where}, read as {to}'s: "
                    f"{type(exc).__name__}: {exc}"
                ) from None
            value = encode_row({c: moved.get(c) for c in columns})
            out.append((v, to, encode_key(up.key), value))
    return out


def write_expected(
    run_dir: Path, mapping: EffectMapping | None, versions: VersionEffects | None
) -> tuple[str, ...]:
    """What each record of ``run_dir``'s dumped topic should do: ``effects.parquet`` by the
    system's ``mapping`` (none: the built-in record encoding, nothing written) or, for
    versions whose rows differ, :func:`write_version_effects`; the versioned columns (empty:
    none)."""
    topic, effects = run_dir / TOPIC, run_dir / EFFECTS
    if versions is not None:
        return write_version_effects(topic, versions, effects, run_dir / VERSION_EFFECTS)
    if mapping is not None:
        write_effects(topic, mapping, effects)
    return ()


def split_export(run_dir: Path, columns: tuple[str, ...]) -> None:
    """Split the versioned ``columns`` off the ``data`` rows of the export's
    ``updates.parquet`` (and ``asof.parquet``, when there is one) into
    ``export/versioned.parquet`` (the module's docstring), a column a row lacks read as null
    there (a table before ``ADD COLUMN``: the rewrite it causes cancels out), and the columns
    some row holds listed in its schema's metadata (:data:`HELD_KEY`). A row that is not a
    JSON object is left as it is (and has no versioned part). Each distinct row is decoded
    once; the rest is polars (``bench/version_split_bench.py``)."""
    table = pq.read_table(run_dir / UPDATES)
    frame, held = _with_parts(pl.from_arrow(table), columns)  # type: ignore[arg-type]
    data = pl.col("collection") == "data"
    shared = frame.filter(data).with_columns(pl.coalesce("shared", "value").alias("value"))
    kept = pl.concat(
        [
            frame.filter(~data).select(table.schema.names),
            _consolidated(shared, ("collection", "key", "value", "ts")).select(table.schema.names),
        ]
    )
    _write(run_dir / UPDATES, kept.to_arrow(), table.schema)
    extra = frame.filter(pl.col("extra").is_not_null())
    split = _consolidated(extra.select("key", pl.col("extra").alias("value"), "ts", "diff"),
                          ("key", "value", "ts"))  # fmt: skip
    stamped = stamp_schema(VERSIONED_SCHEMA, run_dir)
    meta = {**(stamped.metadata or {}), HELD_KEY: json.dumps(sorted(held)).encode()}
    _write(run_dir / VERSIONED, split.to_arrow(), stamped.with_metadata(meta))
    if (run_dir / ASOF).exists():
        asof = pq.read_table(run_dir / ASOF)
        snaps, _ = _with_parts(pl.from_arrow(asof), columns)  # type: ignore[arg-type]
        snaps = snaps.with_columns(pl.coalesce("shared", "value").alias("value"))
        _write(run_dir / ASOF, snaps.select(asof.schema.names).to_arrow(), asof.schema)


def held_columns(path: Path) -> frozenset[str]:
    """The versioned columns some row of the export held (``export/versioned.parquet``'s
    schema metadata, :data:`HELD_KEY`)."""
    meta = pq.read_schema(path).metadata or {}
    return frozenset(json.loads(meta.get(HELD_KEY, b"[]")))


def _with_parts(frame: pl.DataFrame, columns: tuple[str, ...]) -> tuple[pl.DataFrame, set[str]]:
    """``frame`` (``collection, value, ...``) with each ``data`` row's value split in two:
    ``shared`` (without ``columns``) and ``extra`` (theirs); both null for other rows and for
    a value that is not a JSON object (kept as it is); and which of ``columns`` some row
    holds."""
    values = frame.filter(pl.col("collection") == "data")["value"].drop_nulls().unique()
    held: set[str] = set()
    parts = [_split(v, columns, held) for v in values.to_list()]
    lookup = pl.DataFrame(
        {
            "value": values,
            "shared": [p[0] for p in parts],
            "extra": [p[1] for p in parts],
            "collection": ["data"] * len(parts),
        },
        schema={
            "value": pl.Binary,
            "shared": pl.Binary,
            "extra": pl.Binary,
            "collection": pl.String,
        },
    )
    joined = frame.join(lookup, on=["collection", "value"], how="left", maintain_order="left")
    return joined, held


def _consolidated(frame: pl.DataFrame, by: tuple[str, ...]) -> pl.DataFrame:
    """``frame``'s ``diff`` summed per ``by``, in first-seen order, the zeros left out."""
    summed = frame.group_by(list(by), maintain_order=True).agg(pl.col("diff").sum())
    return summed.filter(pl.col("diff") != 0)


def _split(value: bytes, columns: tuple[str, ...], held: set[str]) -> tuple[bytes, bytes | None]:
    """A row's value without the versioned columns, and theirs, each null where the row lacks
    it (None: not a JSON object); the ones it holds are added to ``held``. Both are encoded as
    :func:`~sealcheck.core.effects.encode_row` encodes a mapping: the value came from it, so
    its JSON holds only plain values and sorted keys already."""
    try:
        row = orjson.loads(value)
    except orjson.JSONDecodeError:
        return value, None
    if not isinstance(row, dict):
        return value, None
    shared = {c: v for c, v in row.items() if c not in columns}
    held.update(c for c in columns if c in row)
    extra = {c: row.get(c) for c in columns}
    encoded = [trimmed(orjson.dumps(part, option=_SORTED)) for part in (shared, extra)]
    return encoded[0], encoded[1]


def _write(path: Path, table: pa.Table, schema: pa.Schema) -> None:
    """``table`` as ``path`` in ``schema`` (its types and metadata), replaced atomically."""
    tmp = path.with_suffix(".parquet.tmp")
    try:
        pq.write_table(table.cast(schema), tmp)
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)
