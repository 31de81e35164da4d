"""Vectorised building blocks (polars): hashing, consolidation, change points, classification
of input records and the model's updates.

Everything here is a sort on integers, a hash group-by or an as-of join, so the checkers are
``n log n`` in the number of updates and records. Keys and values are compared through 64-bit
hashes (``kh``, ``vh``) computed once: binary columns are never sorted, only carried for the
few examples shown to people. Two distinct byte strings share a hash with probability about
``n**2 / 2**65`` (below 3e-6 for 10 million distinct values), the price of comparing 10
million updates per run in seconds.

The per-step comparison never rebuilds a state per step: it compares the model's *changes*
with the persisted updates step by step, which is equivalent because both start empty.
"""

from __future__ import annotations

import numpy as np
import orjson
import polars as pl

NULL_KEY, BAD_KEY, BAD_VALUE = "null key", "key is not UTF-8", "value is not UTF-8 JSON"
SEED = 0x5EA1C4EC


def h(col: str | pl.Expr) -> pl.Expr:
    """The 64-bit hash the checkers compare keys and values by (null stays null)."""
    expr = pl.col(col) if isinstance(col, str) else col
    return pl.when(expr.is_not_null()).then(expr.hash(SEED))


def consolidate(updates: pl.DataFrame, since: int = 0) -> pl.DataFrame:
    """Sum diffs per ``(kh, vh, ts)`` (times below ``since`` advanced to it); drop zeros."""
    return (
        updates.lazy()
        .select("kh", "vh", pl.max_horizontal(pl.col("ts"), pl.lit(since)).alias("ts"), "diff")
        .group_by("kh", "vh", "ts")
        .agg(pl.col("diff").sum())
        .filter(pl.col("diff") != 0)
        .collect()
    )


def segmented_cum_sum(value: str, *keys: str) -> pl.Expr:
    """Running sum of ``value`` restarting whenever ``keys`` change (rows sorted by keys)."""
    start = pl.lit(False)
    for k in keys:
        start = start | pl.col(k).ne_missing(pl.col(k).shift(1))
    total = pl.col(value).cum_sum()
    base = pl.when(start.fill_null(True)).then(total - pl.col(value)).forward_fill()
    return total - base


def change_points(updates: pl.DataFrame, since: int = 0) -> pl.DataFrame:
    """Per ``(kh, vh)``, its multiplicity after every time it changes: ``kh, vh, ts, diff,
    mult, prev`` sorted by ``(kh, vh, ts)``. Multiplicity is constant between changes, so
    checking these rows checks every time."""
    return (
        consolidate(updates, since)
        .lazy()
        .sort("kh", "vh", "ts")
        .with_columns(segmented_cum_sum("diff", "kh", "vh").alias("mult"))
        .with_columns((pl.col("mult") - pl.col("diff")).alias("prev"))
        .collect()
    )


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


def slot_bytes() -> pl.Expr:
    """The ``errors`` key of a record: ``key:<hex>`` or, for a null key, ``null:<partition>``."""
    return (
        pl.when(pl.col("key").is_null())
        .then(pl.concat_str(pl.lit("null:"), pl.col("partition").cast(pl.String)))
        .otherwise(pl.concat_str(pl.lit("key:"), pl.col("key").bin.encode("hex")))
        .cast(pl.Binary)
    )


def error_bytes(reason: pl.Expr) -> pl.Expr:
    """The error value of a record, as the pipeline writes it (``json.dumps``, sorted keys)."""
    return pl.concat_str(
        pl.lit('{"offset": '),
        pl.col("offset").cast(pl.String),
        pl.lit(', "partition": '),
        pl.col("partition").cast(pl.String),
        pl.lit(', "reason": "'),
        reason,
        pl.lit('"}'),
    ).cast(pl.Binary)


def classify(topic: pl.DataFrame) -> pl.DataFrame:
    """What each record means under the record encoding (``docs/architecture.md``).

    Returns, per record (``row`` = its index in ``topic``): ``partition, offset``; ``kh``
    (hash of the raw key) and ``np`` (the partition for a null key, else -1), which together
    identify its slot; ``rvh`` (hash of the raw value); ``dkh``/``dvh`` (its data key/value,
    null when it has none); ``evh`` (its error value, null when it has none); and
    ``error_value`` (the error bytes, for the few records that have one).
    """
    bad_keys = [k for k in topic["key"].drop_nulls().unique().to_list() if not _utf8(k)]
    t = topic.with_row_index("row").with_columns(
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
    t = t.with_columns(reason.alias("reason"))
    errors = (
        t.filter(pl.col("reason").is_not_null())
        .select("row", error_bytes(pl.col("reason")).alias("error_value"))
        .with_columns(h("error_value").alias("evh"))
    )
    out = t.select(
        "row",
        "partition",
        "offset",
        h("key").alias("kh"),
        pl.when(pl.col("key").is_null()).then(pl.col("partition")).otherwise(-1).alias("np"),
        h("value").alias("rvh"),
        pl.when(pl.col("key_ok")).then(h("key")).alias("dkh"),
        pl.when(pl.col("key_ok") & pl.col("value_ok")).then(h("value")).alias("dvh"),
    )
    return out.join(errors, on="row", how="left")


def binding_ranges(bindings: pl.DataFrame, upper: int) -> pl.DataFrame:
    """Per partition and sealed step, the offsets bound: ``partition, ts, start, end``.

    Consolidated first, so a compacted history (merged rows at ``since`` beside that step's
    own retraction) yields one move per partition and step."""
    consolidated = (
        bindings.filter(pl.col("ts") < upper)
        .group_by("key", "value", "ts")
        .agg(pl.col("diff").sum())
    )
    moves = consolidated.filter(pl.col("diff") > 0).select(
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
    """Per slot and step the winning record (highest ``(offset, partition)``), sorted by slot
    then step, with the slot's previous winner's ``prev_row``/``prev_dvh``/``prev_evh``;
    steps below ``since`` are merged into ``since``."""
    same = (pl.col("kh").eq_missing(pl.col("kh").shift(1))) & (
        pl.col("np") == pl.col("np").shift(1)
    )
    return (
        stepped.lazy()
        .filter(pl.col("step").is_not_null())
        .select(  # only what the sort must carry, in narrow types: sorting is the cost here
            "row",
            "kh",
            pl.col("np").cast(pl.Int32),
            pl.max_horizontal(pl.col("step"), pl.lit(since)).cast(pl.Int64).alias("step"),
            "offset",
            pl.col("partition").cast(pl.Int32),
            "dkh",
            "dvh",
            "evh",
        )
        .sort("kh", "np", "step", "offset", "partition", nulls_last=True)
        .unique(subset=["kh", "np", "step"], keep="last", maintain_order=True)
        .with_columns(
            *(
                pl.when(same).then(pl.col(c).shift(1)).alias(f"prev_{c}")
                for c in ("row", "dvh", "evh")
            )
        )
        .collect()
    )


def model_updates(winners: pl.DataFrame, collection: str, slot_kh: pl.DataFrame) -> pl.DataFrame:
    """The updates the model emits for ``data`` or ``errors``: ``kh, vh, ts, diff, row``
    (``row``: the input record that wrote the value). ``slot_kh`` maps ``row`` to the hash of
    the record's ``errors`` key (needed for ``errors`` only)."""
    value = "dvh" if collection == "data" else "evh"
    w = winners.filter(pl.col(f"prev_{value}").ne_missing(pl.col(value)))
    if collection == "data":
        w = w.filter(pl.col("dkh").is_not_null()).with_columns(pl.col("dkh").alias("ukh"))
    else:
        w = w.join(slot_kh, on="row", how="left").rename({"skh": "ukh"})
    retract = w.filter(pl.col(f"prev_{value}").is_not_null()).select(
        pl.col("ukh").alias("kh"),
        pl.col(f"prev_{value}").alias("vh"),
        pl.col("step").alias("ts"),
        pl.lit(-1, pl.Int64).alias("diff"),
        pl.col("prev_row").alias("row"),
    )
    insert = w.filter(pl.col(value).is_not_null()).select(
        pl.col("ukh").alias("kh"),
        pl.col(value).alias("vh"),
        pl.col("step").alias("ts"),
        pl.lit(1, pl.Int64).alias("diff"),
        "row",
    )
    return pl.concat([retract, insert])
