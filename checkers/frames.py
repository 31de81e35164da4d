"""Vectorised building blocks (polars): consolidation, change points, and the model's updates.

Everything here is a sort, a group-by or an as-of join over columns, so the checkers are
``n log n`` in the number of updates and records. The per-step comparison never rebuilds a
state per step: it compares the model's *changes* with the persisted updates step by step,
which is equivalent because both start empty.
"""

from __future__ import annotations

import numpy as np
import orjson
import polars as pl

NULL_KEY, BAD_KEY, BAD_VALUE = "null key", "key is not UTF-8", "value is not UTF-8 JSON"


def consolidate(updates: pl.DataFrame, since: int = 0) -> pl.DataFrame:
    """Sum diffs per ``(key, value, ts)`` (times below ``since`` advanced to it); drop zeros."""
    return (
        updates.with_columns(pl.max_horizontal(pl.col("ts"), pl.lit(since)).alias("ts"))
        .group_by("key", "value", "ts")
        .agg(pl.col("diff").sum())
        .filter(pl.col("diff") != 0)
    )


def change_points(updates: pl.DataFrame, since: int = 0) -> pl.DataFrame:
    """Per ``(key, value)``, its multiplicity after every time it changes: ``key, value, ts,
    mult, prev`` sorted by ``(key, value, ts)``. Multiplicity is constant between changes, so
    checking these rows checks every time."""
    c = consolidate(updates, since).sort("key", "value", "ts")
    new_group = (pl.col("key") != pl.col("key").shift(1)) | (
        pl.col("value") != pl.col("value").shift(1)
    )
    c = c.with_columns(new_group.fill_null(True).cum_sum().alias("gid"))
    c = c.with_columns(pl.col("diff").cum_sum().over("gid").alias("mult"))
    return c.with_columns((pl.col("mult") - pl.col("diff")).alias("prev")).drop("gid")


def _utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _json_ok(values: list[bytes]) -> np.ndarray:
    loads, err = orjson.loads, orjson.JSONDecodeError
    out = np.ones(len(values), dtype=bool)
    for i, v in enumerate(values):
        try:
            loads(v)
        except err:
            out[i] = False
    return out


def classify(topic: pl.DataFrame) -> pl.DataFrame:
    """Add what each record means under the record encoding (``docs/architecture.md``):
    ``slot`` (its ``errors`` key), ``data_key``, ``data_value`` and ``error_value``."""
    bad_keys = [k for k in topic["key"].drop_nulls().unique().to_list() if not _utf8(k)]
    t = topic.with_columns(
        (
            pl.col("key").is_not_null()
            & ~pl.col("key").is_in(pl.Series(bad_keys, dtype=pl.Binary).implode())
        ).alias("key_ok")
    )
    candidates = (t["key_ok"] & t["value"].is_not_null()).to_numpy()
    value_ok = np.zeros(t.height, dtype=bool)
    value_ok[np.flatnonzero(candidates)] = _json_ok(t.filter(candidates)["value"].to_list())
    t = t.with_columns(pl.Series("value_ok", value_ok))
    reason = (
        pl.when(pl.col("key").is_null())
        .then(pl.lit(NULL_KEY))
        .when(~pl.col("key_ok"))
        .then(pl.lit(BAD_KEY))
        .when(pl.col("value").is_not_null() & ~pl.col("value_ok"))
        .then(pl.lit(BAD_VALUE))
    )
    error_json = pl.concat_str(
        pl.lit('{"offset": '),
        pl.col("offset").cast(pl.String),
        pl.lit(', "partition": '),
        pl.col("partition").cast(pl.String),
        pl.lit(', "reason": "'),
        reason,
        pl.lit('"}'),
    )
    slot = (
        pl.when(pl.col("key").is_null())
        .then(pl.concat_str(pl.lit("null:"), pl.col("partition").cast(pl.String)))
        .otherwise(pl.concat_str(pl.lit("key:"), pl.col("key").bin.encode("hex")))
    )
    return t.with_columns(
        slot.cast(pl.Binary).alias("slot"),
        pl.when(pl.col("key_ok")).then(pl.col("key")).alias("data_key"),
        pl.when(pl.col("key_ok") & pl.col("value_ok")).then(pl.col("value")).alias("data_value"),
        error_json.cast(pl.Binary).alias("error_value"),
    ).drop("key_ok", "value_ok")


def binding_ranges(bindings: pl.DataFrame, upper: int) -> pl.DataFrame:
    """Per partition and sealed step, the offsets bound: ``partition, ts, start, end``."""
    moves = bindings.filter((pl.col("diff") > 0) & (pl.col("ts") < upper)).select(
        pl.col("key").cast(pl.String).cast(pl.Int64).alias("partition"),
        pl.col("ts"),
        pl.col("value").cast(pl.String).cast(pl.Int64).alias("end"),
    )
    return moves.sort("partition", "ts").with_columns(
        pl.col("end").shift(1).over("partition").fill_null(0).alias("start")
    )


def assign_steps(records: pl.DataFrame, ranges: pl.DataFrame) -> pl.DataFrame:
    """Add ``step``: the sealed step whose bound range holds the record (null if none)."""
    joined = records.sort("offset").join_asof(
        ranges.sort("start").select("partition", "start", "end", pl.col("ts").alias("step")),
        left_on="offset",
        right_on="start",
        by="partition",
        strategy="backward",
        check_sortedness=False,  # sorted by offset; polars cannot verify that per group
    )
    return joined.with_columns(
        pl.when(pl.col("offset") < pl.col("end")).then(pl.col("step")).alias("step")
    ).drop("start", "end")


def step_winners(stepped: pl.DataFrame, since: int = 0) -> pl.DataFrame:
    """Per ``(slot, step)`` the winning record (highest ``(offset, partition)``), sorted by
    ``(slot, step)``; steps below ``since`` are merged into ``since``."""
    return (
        stepped.filter(pl.col("step").is_not_null())
        .with_columns(pl.max_horizontal(pl.col("step"), pl.lit(since)).alias("step"))
        .sort("slot", "step", "offset", "partition")
        .unique(subset=["slot", "step"], keep="last", maintain_order=True)
    )


def model_updates(winners: pl.DataFrame, key: str, value: str) -> pl.DataFrame:
    """The updates the model emits for one collection: ``key, value, ts, diff`` (+ provenance
    ``partition, offset`` of the winning record)."""
    same = pl.col("slot") == pl.col("slot").shift(1)
    w = winners.filter(pl.col(key).is_not_null()).with_columns(
        pl.when(same).then(pl.col(value).shift(1)).alias("prev")
    )
    changed = w.filter(pl.col("prev").ne_missing(pl.col(value)))
    cols: list[pl.Expr] = [
        pl.col(key).alias("key"),
        pl.col("step").alias("ts"),
        pl.col("partition"),
        pl.col("offset"),
    ]
    retract = changed.filter(pl.col("prev").is_not_null()).select(
        *cols, pl.col("prev").alias("value"), pl.lit(-1, pl.Int64).alias("diff")
    )
    insert = changed.filter(pl.col(value).is_not_null()).select(
        *cols, pl.col(value).alias("value"), pl.lit(1, pl.Int64).alias("diff")
    )
    return pl.concat([retract, insert])
