"""Acknowledged writes against the topic: which writes Kafka lost or holds otherwise (a Kafka
anomaly, never the pipeline's). Each write is compared with the record at its position in the
topic dump, found by a binary search in the records' packed positions, not through hash sets
of millions of rows."""

from __future__ import annotations

import numpy as np
import polars as pl

from sealcheck.checkers.frames import h, pair_hash
from sealcheck.checkers.replay import packed
from sealcheck.rundir.history import History


def positions(frame: pl.DataFrame) -> np.ndarray:
    """Each row's packed ``(partition, offset)`` (:func:`packed`)."""
    return packed(frame["partition"].to_numpy(), frame["offset"].to_numpy())


def locate(held: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Per packed position in ``wanted``, the index in ``held`` (the packed positions of the
    topic's records) of the record there; -1 where the topic holds none.

    A topic dump is in position order, so this is one binary search per position; an
    unordered one is sorted first. Where the topic holds a position more than once, the first
    of its records in position order (then in ``held``'s order) is the one given."""
    order: np.ndarray | None = None
    if held.size > 1 and not bool(np.all(held[1:] > held[:-1])):
        order = np.argsort(held, kind="stable")
        held = held[order]
    if held.size == 0:
        return np.full(len(wanted), -1, dtype=np.int64)
    at = np.minimum(np.searchsorted(held, wanted), held.size - 1)
    found = at if order is None else order[at]
    out: np.ndarray = np.where(held[at] == wanted, found, -1)
    return out


def hashed(history: History) -> pl.DataFrame:
    """The acknowledged writes in history order, as ``pos`` (:func:`sealcheck.checkers.replay.
    packed` partition and offset), ``kh`` and ``vh`` (the key's and the value's hashes)."""
    acked = history.collect(
        history.acked.lazy().select(
            pl.col("partition").cast(pl.Int64),
            pl.col("offset").cast(pl.Int64),
            h("key").alias("kh"),
            h("value").alias("vh"),
        )
    )
    return acked.select(pl.Series("pos", positions(acked)), "kh", "vh")


def lost(records: pl.DataFrame, acked: pl.DataFrame) -> pl.DataFrame:
    """The writes of ``acked`` (:func:`hashed`) the topic's ``records``
    (:func:`sealcheck.checkers.replay.classify`) do not hold as written: ``ack`` (position in
    history order), ``pos``, ``kh``, ``vh``, ``present`` (the topic holds another record at
    that position). Each write is compared with the record at its position (:func:`locate`);
    one that differs there is lost only if no record of the topic matches it whole (a dump may
    hold a position twice)."""
    held = positions(records)
    at = locate(held, acked["pos"].to_numpy())
    present = pl.Series("present", at >= 0)
    same = present
    if records.height:
        there = records.select("kh", "rvh")[pl.Series(np.maximum(at, 0))]
        same = same & there["kh"].eq_missing(acked["kh"]) & there["rvh"].eq_missing(acked["vh"])
    out = acked.with_row_index("ack").with_columns(present).filter(~same)
    if out.height and records.height:
        whole = records.select(_whole(held, "kh", "rvh"))["whole"]
        out = out.filter(~_whole(out["pos"], "kh", "vh").is_in(whole.implode()))
    return out


def _whole(pos: np.ndarray | pl.Series, kh: str, vh: str) -> pl.Expr:
    """A hash of a packed position and a key and value hash: a write as a whole."""
    at = pl.lit(pl.Series(pos)).cast(pl.UInt64, wrap_numerical=True)
    return pair_hash(at, pair_hash(kh, vh)).alias("whole")
