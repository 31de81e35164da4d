"""The polars schemas the checkers read a run directory's files with, derived from the Arrow
schemas their writers use (:mod:`sealcheck.rundir`), so a reader cannot drift from its writer."""

from __future__ import annotations

import polars as pl
import pyarrow as pa

from sealcheck.rundir.effects import SCHEMA as EFFECTS_COLUMNS
from sealcheck.rundir.files import EXPORT_SCHEMA, TOPIC_COLUMNS

__all__ = ["EFFECTS_SCHEMA", "TOPIC_SCHEMA", "UPDATES_SCHEMA"]


def _polars(schema: pa.Schema) -> pl.Schema:
    return pl.DataFrame(schema.empty_table()).schema


#: ``topic.parquet``: ``partition, offset, key, value`` (null key / tombstone: null); its
#: ``headers`` reach the checkers only through a system's mapping (``effects.parquet``)
TOPIC_SCHEMA = _polars(pa.schema([f for f in TOPIC_COLUMNS if f.name != "headers"]))
#: ``effects.parquet``: what each record should do, by a system's own mapping
EFFECTS_SCHEMA = _polars(EFFECTS_COLUMNS)
#: ``export/updates.parquet``: ``collection, key, value, ts, diff``
UPDATES_SCHEMA = _polars(EXPORT_SCHEMA)
