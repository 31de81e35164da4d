"""``effects.parquet``: what each input record should do to the output of a system under test
that states its own mapping (:mod:`sealcheck.core.effects`), written by the harness right after
the topic dump so the checkers judge the run without importing the system.

Columns: ``row`` (the record's position in ``topic.parquet``), ``partition``, ``offset``,
``table`` (``data`` or ``errors``), ``key`` (:func:`~sealcheck.core.effects.encode_key`) and
``value`` (:func:`~sealcheck.core.effects.encode_row`; null for a delete). A record the mapping
skips has no row; a record may have one row per table. A run without this file is judged
against the built-in record encoding of ``docs/formats.md`` ("Record encoding").
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from sealcheck.core.effects import (
    Delete,
    Effect,
    EffectError,
    EffectMapping,
    Record,
    checked_effects,
    encode_key,
    encode_row,
)
from sealcheck.rundir.files import EFFECTS, headers_of
from sealcheck.rundir.runid import stamp_schema

__all__ = ["EFFECTS", "SCHEMA", "apply_mapping", "record_batches", "write_effects"]

SCHEMA = pa.schema(
    [
        ("row", pa.int64()),
        ("partition", pa.int64()),
        ("offset", pa.int64()),
        ("table", pa.string()),
        ("key", pa.binary()),
        ("value", pa.binary()),
    ]
)
_BATCH = 100_000


def write_effects(topic: Path, mapping: EffectMapping, out: Path) -> int:
    """Apply ``mapping`` to every record of the dumped ``topic`` in order and write the
    effects to ``out`` (atomically, stamped with the run id of the directory it is written
    into: :mod:`sealcheck.rundir.runid`); the number of effects. Raises :class:`EffectError` naming
    the first record the mapping fails on (it raised, or returned something that is not an
    effect), and nothing is written then."""
    tmp = out.with_suffix(".parquet.tmp")
    count, row = 0, 0
    try:
        with pq.ParquetWriter(tmp, stamp_schema(SCHEMA, out.parent)) as writer:
            for batch in record_batches(topic):
                cols: dict[str, list[object]] = {n: [] for n in SCHEMA.names}
                for rec in batch:
                    for e in apply_mapping(mapping, rec):
                        cols["row"].append(row)
                        cols["partition"].append(rec.partition)
                        cols["offset"].append(rec.offset)
                        cols["table"].append(e.table)
                        cols["key"].append(encode_key(e.key))
                        cols["value"].append(None if isinstance(e, Delete) else encode_row(e.row))
                    row += 1
                count += len(cols["row"])
                writer.write_table(pa.table(cols, schema=SCHEMA))
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    tmp.replace(out)
    return count


def record_batches(topic: Path) -> Iterator[list[Record]]:
    """The records of the dumped ``topic``, in order, a batch at a time."""
    for batch in pq.ParquetFile(topic).iter_batches(batch_size=_BATCH):
        d = batch.to_pydict()
        heads = d.get("headers") or [None] * len(d["offset"])  # none in old dumps
        yield [
            Record(int(p), int(o), k, v, headers_of(h))
            for p, o, k, v, h in zip(
                d["partition"], d["offset"], d["key"], d["value"], heads, strict=True
            )
        ]


def apply_mapping(mapping: EffectMapping, rec: Record) -> tuple[Effect, ...]:
    """The checked effects of one record (:class:`EffectError` naming it otherwise)."""
    where = f"record partition {rec.partition} offset {rec.offset} (key {rec.key!r})"
    try:
        found = checked_effects(mapping(rec))  # a bad key or row fails here, naming the record
    except EffectError as exc:
        raise EffectError(f"the mapping's effect of {where}: {exc}") from None
    except Exception as exc:  # the user's mapping raised: say where, keep its words
        raise EffectError(f"the mapping raised on {where}: {type(exc).__name__}: {exc}") from None
    return found
