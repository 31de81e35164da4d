"""The vectorised model: what each input record means, which sealed step bound it, which
record wins each slot at each step, and the updates (or just the fingerprints) that the
model emits for ``data`` and ``errors``.

The record encoding is the one in ``docs/formats.md``; the tests' ``tests/model.py`` is
the slow row-by-row reference they compare this against. Bytes are looked at once, batch by batch,
while classifying: afterwards only hashes, positions and a reason code are kept.
"""

from __future__ import annotations

import collections
import os
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
import orjson
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from sealcheck.checkers.frames import h, pair_hash, run_ends, signed, sort_runs

NULL_KEY, BAD_KEY, BAD_VALUE = "null key", "key is not UTF-8", "value is not UTF-8 JSON"
#: ``reason`` codes of :func:`classify` (0: the record is good)
REASONS = {1: NULL_KEY, 2: BAD_KEY, 3: BAD_VALUE}
BATCH = 500_000
_WORKERS = min(4, os.cpu_count() or 1)  # batches classified at once
BYTES_SCHEMA = pl.Schema(
    {"partition": pl.Int64, "offset": pl.Int64, "key": pl.Binary, "value": pl.Binary}
)
POS_BITS = 40  # offsets below 2**40 and partitions below 2**23 pack into one int64

# A flat JSON object of ASCII strings, small integers, booleans and nulls: a subset of what
# orjson accepts, checked by RE2 without a Python call. Everything else goes to orjson.
_S = r'"[^"\\\x00-\x1f]*"'
_V = rf"(?:{_S}|-?(?:0|[1-9][0-9]{{0,14}})|true|false|null)"
SIMPLE_JSON = rf"^\{{(?:{_S}: ?{_V}(?:, ?{_S}: ?{_V})*)?\}}$"


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


def reason_text() -> pl.Expr:
    """The ``reason`` code as the text the pipeline writes."""
    return pl.col("reason").replace_strict(REASONS, default=None, return_dtype=pl.String)


def _ascii(col: pl.Series) -> np.ndarray:
    """Per row: the bytes are all ASCII (so valid UTF-8); False for nulls."""
    raw = col.to_arrow()
    text = pc.cast(
        raw, pa.large_string() if pa.types.is_large_binary(raw.type) else pa.string(), safe=False
    )  # no validation: only the ASCII test reads these bytes
    return np.asarray(pc.fill_null(pc.string_is_ascii(text), False))


def _decodes(values: list[bytes]) -> np.ndarray:
    out = np.ones(len(values), dtype=bool)
    for i, v in enumerate(values):
        try:
            v.decode("utf-8")
        except UnicodeDecodeError:
            out[i] = False
    return out


def _json_ok(values: list[bytes]) -> np.ndarray:
    loads, err = orjson.loads, orjson.JSONDecodeError
    out = np.ones(len(values), dtype=bool)
    for i, v in enumerate(values):
        try:
            loads(v)
        except err:
            out[i] = False
    return out


def _classify_batch(b: pl.DataFrame, base: int = 0) -> tuple[pl.DataFrame, pl.DataFrame]:
    """:func:`classify` of one batch whose first record is record ``base`` of the topic."""
    key, value = b["key"], b["value"]
    key_ok = _ascii(key)
    odd = np.flatnonzero(~key_ok & key.is_not_null().to_numpy())
    key_ok[odd] = _decodes(key.gather(odd).to_list())
    raw = value.to_arrow()
    text = pc.cast(
        raw, pa.large_string() if pa.types.is_large_binary(raw.type) else pa.string(), safe=False
    )
    simple = np.asarray(
        pc.fill_null(
            pc.and_(pc.string_is_ascii(text), pc.match_substring_regex(text, SIMPLE_JSON)), False
        )
    )
    has_value = value.is_not_null().to_numpy()
    value_ok = simple.copy()
    check = np.flatnonzero(key_ok & has_value & ~simple)
    value_ok[check] = _json_ok(value.gather(check).to_list())
    reason = np.where(
        key.is_null().to_numpy(), 1, np.where(~key_ok, 2, np.where(has_value & ~value_ok, 3, 0))
    ).astype(np.uint8)
    t = b.with_columns(pl.Series("reason", reason))
    out = t.select(
        pl.col("partition").cast(pl.Int32),
        pl.col("offset").cast(pl.Int64),
        h("key").alias("kh"),
        h("value").alias("rvh"),
        "reason",
    )
    errs = (
        t.with_row_index("row", offset=base)
        .filter(pl.col("reason") != 0)
        .select("row", h(error_bytes(reason_text())).alias("evh"), h(slot_bytes()).alias("skh"))
    )
    return out, errs


def _batches(topic: pl.DataFrame | pl.LazyFrame) -> Iterator[pl.DataFrame]:
    if isinstance(topic, pl.DataFrame):
        yield from topic.iter_slices(BATCH)
    else:
        yield from topic.collect_batches(chunk_size=BATCH)


def classify(topic: pl.DataFrame | pl.LazyFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """What each record means, bytes looked at once: ``(records, errors)``.

    ``records`` is in topic order (row ``i`` is record ``i``): ``partition, offset``; ``kh``
    (hash of the raw key, null for a null key); ``rvh`` (hash of the raw value, null for a
    tombstone); ``reason`` (0 good, else a key of :data:`REASONS`). A good record's data key
    is ``kh`` and its data value ``rvh``. ``errors`` has, for the records with a reason,
    ``row``, ``evh`` (hash of the error value) and ``skh`` (hash of the ``errors`` key).

    Batches are classified a few at a time in threads (Arrow's string kernels and the hashes
    release the GIL: ~1.6x on 2 cores); at most one batch per thread waits in memory.
    """
    parts: list[tuple[pl.DataFrame, pl.DataFrame]] = []
    pending: collections.deque[Future[tuple[pl.DataFrame, pl.DataFrame]]] = collections.deque()
    base = 0
    with ThreadPoolExecutor(_WORKERS, thread_name_prefix="classify") as pool:
        for b in _batches(topic):
            pending.append(pool.submit(_classify_batch, b, base))
            base += b.height
            if len(pending) > _WORKERS:
                parts.append(pending.popleft().result())
        parts += [f.result() for f in pending]
    if not parts:
        return _classify_batch(pl.DataFrame(schema=BYTES_SCHEMA))
    records, errors = zip(*parts, strict=True)
    return pl.concat(records, rechunk=True), pl.concat(errors, rechunk=True)


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


def packed(partition: np.ndarray, offset: np.ndarray) -> np.ndarray:
    """``(partition, offset)`` as one sortable int64; refuses positions that do not fit."""
    if partition.size and (
        partition.max() >= 1 << 22 or offset.max() >= 1 << POS_BITS or offset.min() < -1
    ):
        raise ValueError(
            f"positions up to partition {partition.max()} / offset {offset.max()} do not fit "
            f"the checkers' packed positions (partition < 2**22, offset < 2**{POS_BITS})"
        )
    return (partition.astype(np.int64) << POS_BITS) + offset.astype(np.int64)


def first_bound(ranges: pl.DataFrame) -> pl.DataFrame:
    """The ranges of :func:`binding_ranges` as each record's *first* binding: per partition,
    ``start`` and ``end`` become running maxima in step order and empty ranges are dropped.

    With bound offsets that only grow this changes nothing. When a bound goes back (the
    ``bindings`` checker's ``offset-went-back``, blamed at that step), records already bound
    stay with the step that first bound them, and later steps own only offsets past the
    highest bound so far — so no record is re-assigned to a later step or left unbound, and
    no difference is reported before the step where the bindings went wrong."""
    top = pl.col("end").cum_max().over("partition")
    return (
        ranges.sort("partition", "ts")
        .with_columns(top.alias("end"))
        .with_columns(pl.col("end").shift(1).over("partition").fill_null(0).alias("start"))
        .filter(pl.col("end") > pl.col("start"))
    )


def assign_steps(classified: pl.DataFrame, ranges: pl.DataFrame) -> pl.Series:
    """Per record, the sealed step that first bound it (null if none): the step whose
    :func:`first_bound` range holds it."""
    r = first_bound(ranges).sort("partition", "start")
    starts = packed(r["partition"].to_numpy(), r["start"].to_numpy())
    order = np.argsort(starts, kind="stable")
    starts = starts[order]
    ends = r["end"].to_numpy()[order]
    steps = r["ts"].to_numpy()[order]
    parts = r["partition"].to_numpy()[order]
    part = classified["partition"].to_numpy()
    off = classified["offset"].to_numpy()
    at = np.searchsorted(starts, packed(part, off), side="right") - 1
    if len(starts) == 0:
        return pl.Series("step", [None] * len(part), dtype=pl.Int64)
    safe = np.clip(at, 0, None)
    hit = (at >= 0) & (parts[safe] == part) & (off < ends[safe])
    step = pl.Series("step", steps[safe], dtype=pl.Int64)
    return pl.select(pl.when(pl.Series(hit)).then(step).alias("step")).to_series()


def builtin_effects(records: pl.DataFrame, errors: pl.DataFrame) -> dict[str, pl.DataFrame]:
    """The built-in record encoding (``docs/formats.md``) as effects per collection,
    from the two frames of :func:`classify`: ``row, partition, offset, kh, vh`` (``kh``: hash
    of the key in that collection, ``vh``: hash of the value, null for a delete).

    ``data``: a record with a UTF-8 key upserts its raw value when it is good and deletes the
    key otherwise (a tombstone, a value that is not UTF-8 JSON); ``errors``: a bad record
    upserts its error under its slot (``key:<hex>``, ``null:<partition>``), and a good record
    of a slot that ever had an error deletes it (other good records cannot change
    ``errors``, so they are left out)."""
    indexed = records.with_row_index("row").with_columns(pl.col("row").cast(pl.Int64))
    cols = ("row", "partition", "offset")
    data = indexed.filter(pl.col("reason").is_in([0, 3])).select(
        *cols, "kh", pl.when(pl.col("reason") == 0).then(pl.col("rvh")).alias("vh")
    )
    bad = errors.with_columns(pl.col("row").cast(pl.Int64)).join(
        indexed.select(*cols, "kh"), on="row"
    )
    slots = bad.filter(pl.col("kh").is_not_null()).select("kh", "skh").unique("kh")
    cleared = (
        indexed.filter(pl.col("reason") == 0)
        .join(slots, on="kh")
        .select(*cols, pl.col("skh").alias("kh"), pl.lit(None, pl.UInt64).alias("vh"))
    )
    raised = bad.select(*cols, pl.col("skh").alias("kh"), pl.col("evh").alias("vh"))
    return {"data": data, "errors": pl.concat([raised, cleared]).sort("row")}


def step_winners(effects: pl.DataFrame, step: pl.Series, since: int = 0) -> pl.DataFrame:
    """Per key and step the winning effect (the record with the highest ``(offset,
    partition)``), sorted by key then step: ``row, slot, step, dvh, prev_row, prev_dvh``
    (``slot``: the key's hash; ``dvh``: the value's hash, null for a delete; ``prev_``: the
    key's previous winner). ``effects`` are one collection's (:func:`builtin_effects`, or a
    system's own mapping); ``step`` is each input record's step (:func:`assign_steps`). Steps
    below ``since`` are merged into ``since``."""
    rows = effects["row"].cast(pl.Int64)
    bound = (
        effects.with_columns(step.gather(rows).alias("step"))
        .filter(pl.col("step").is_not_null())
        .select(
            "row",
            pl.col("kh").alias("slot"),
            pl.max_horizontal(pl.col("step"), pl.lit(since)).cast(pl.Int32).alias("step"),
            "offset",
            "partition",
            pl.col("vh").alias("dvh"),
        )
    )
    same = pl.col("slot") == pl.col("slot").shift(1)
    return (
        sort_runs(bound, "slot", "step", "offset", "partition")
        .lazy()
        .filter(run_ends("slot", "step"))
        .select(
            "row",
            "slot",
            "step",
            "dvh",
            *(pl.when(same).then(pl.col(c).shift(1)).alias(f"prev_{c}") for c in ("row", "dvh")),
        )
        .collect()
    )


def changes(winners: pl.DataFrame) -> pl.DataFrame:
    """The winners of one collection as its changes: ``ukh, step, new, old, row,
    prev_row``."""
    return winners.select(
        pl.col("slot").alias("ukh"),
        "step",
        pl.col("dvh").alias("new"),
        pl.col("prev_dvh").alias("old"),
        "row",
        "prev_row",
    )


def _flags() -> tuple[pl.Expr, pl.Expr]:
    changed = pl.col("new").ne_missing(pl.col("old"))
    return changed & pl.col("new").is_not_null(), changed & pl.col("old").is_not_null()


def model_fingerprints(changes: pl.DataFrame, upper: int) -> pl.DataFrame:
    """Per step below ``upper``, the fingerprint of the model's updates (``ts, fp``)."""
    ins, ret = _flags()
    zero = pl.lit(0, dtype=pl.UInt64)
    share = pl.when(ins).then(pair_hash("ukh", "new")).otherwise(zero) + pl.when(ret).then(
        signed(pair_hash("ukh", "old"), pl.lit(-1))
    ).otherwise(zero)
    return (
        changes.lazy()
        .filter(pl.col("step") < upper)
        .group_by(pl.col("step").alias("ts"))
        .agg(share.sum().alias("fp"))
        .filter(pl.col("fp") != 0)
        .collect()
    )


def model_updates(changes: pl.DataFrame) -> pl.DataFrame:
    """The updates the model emits: ``kh, vh, ts, diff, row`` (``row``: the input record that
    wrote the value)."""
    ins, ret = _flags()
    c = changes.lazy()
    retract = c.filter(ret).select(
        pl.col("ukh").alias("kh"),
        pl.col("old").alias("vh"),
        pl.col("step").alias("ts"),
        pl.lit(-1, pl.Int64).alias("diff"),
        pl.col("prev_row").alias("row"),
    )
    insert = c.filter(ins).select(
        pl.col("ukh").alias("kh"),
        pl.col("new").alias("vh"),
        pl.col("step").alias("ts"),
        pl.lit(1, pl.Int64).alias("diff"),
        "row",
    )
    return pl.concat([retract, insert]).collect()


def latest(winners: pl.DataFrame) -> pl.DataFrame:
    """Each slot's last winner (its latest record when every record is bound)."""
    return winners.filter(run_ends("slot"))
