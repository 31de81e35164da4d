"""The index the prefix checker (:mod:`.prefix`) sweeps: one table's input records sorted by
partition and offset, with dense key ids, each record's value and the value it replaces, and a
per-key order of the records.

Values are 64-bit hashes seen as int64 ids; two ids are reserved: :data:`ABSENT` (no value: never
written, deleted, not shown) and :data:`MANY` (a state shows the key with several values, or one
value more than once; no cut gives that). A hash equal to either is as unlikely as any other
collision of the checkers' hashes (:mod:`sealcheck.checkers.frames`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from sealcheck.checkers.frames import hash_order, sort_runs

#: the value id of "no value" (never written, deleted, or a key the state does not hold)
ABSENT = np.int64(-(2**63))
#: the value id of a key a state shows with several values, or one value more than once
MANY = np.int64(-(2**63) + 1)


def as_ids(vh: pl.Series) -> np.ndarray:
    """64-bit value hashes as int64 ids (null: :data:`ABSENT`)."""
    ids = np.asarray(vh.cast(pl.UInt64).fill_null(0).to_numpy(), dtype=np.uint64)
    out = ids.view(np.int64).copy()
    out[vh.is_null().to_numpy()] = ABSENT
    return out


@dataclass
class Table:
    """One table's input records, sorted by partition then offset, with dense key ids."""

    keys: np.ndarray  # uint64: every key hash (input and observed), sorted
    kid: np.ndarray  # per record: its key id
    val: np.ndarray  # per record: its value id (ABSENT: a delete)
    prev: np.ndarray  # per record: the key's value before it
    offset: np.ndarray
    row: np.ndarray
    bounds: dict[int, tuple[int, int]]  # partition -> [start, end) of its records
    part_of: np.ndarray  # per key id: its partition (-1: no input record)
    by_key: np.ndarray  # record indices sorted by (key, position)
    #: per record: the last of its offset in its partition. Rows of one input record (its
    #: effects on several tables judged as one) share an offset: a cut falls only after the
    #: last of them, never between them
    last_of_offset: np.ndarray
    #: per record: the position of its key's next record (``len(kid)``: none)
    next_of_key: np.ndarray

    def apply(self, held: np.ndarray, start: int, end: int) -> None:
        """Set ``held`` (a value id per key id) to what records ``[start, end)`` (global
        positions, in order) leave: each key's last record among them decides (the one whose
        key has no next record before ``end``)."""
        if end <= start:
            return
        last = self.next_of_key[start:end] >= end
        held[self.kid[start:end][last]] = self.val[start:end][last]

    def whole(self, kids: np.ndarray) -> np.ndarray:
        """What keys ``kids`` hold after every record: their last record's value."""
        held = np.full(len(self.keys), ABSENT, dtype=np.int64)
        last = self.next_of_key == len(self.kid)  # each key's last record: none follows it
        held[self.kid[last]] = self.val[last]
        out: np.ndarray = held[kids]
        return out


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """``np.unique(values)`` by a sort: numpy 2's hash-based ``unique`` takes ~15x as long
    on millions of 64-bit hashes."""
    ordered = np.sort(values)
    out: np.ndarray = ordered[np.r_[True, ordered[1:] != ordered[:-1]]] if len(values) else ordered
    return out


def index(effects: pl.DataFrame, observed_keys: pl.Series) -> tuple[Table, list[int]]:
    """Index one table's effects (``partition, offset, kh, vh, row``); the key hashes whose
    records span partitions are dropped and returned."""
    eff = sort_runs(effects, "partition", "offset")  # as the topic dump writes them: kept
    table = _table(eff, observed_keys)
    # a key whose records span partitions has a record outside the partition it was given
    astray = _partition_of_each(table) != table.part_of[table.kid]
    if not astray.any():
        return table, []
    spans = pl.Series("kh", sorted_unique(table.keys[table.kid[astray]]), dtype=pl.UInt64)
    kept = eff.filter(~pl.col("kh").is_in(spans.implode()))
    return _table(kept, observed_keys), [int(k) for k in spans.to_list()]


def _partition_of_each(table: Table) -> np.ndarray:
    """Each record's partition (from the bounds)."""
    out = np.empty(len(table.kid), dtype=np.int64)
    for p, (s, e) in table.bounds.items():
        out[s:e] = p
    return out


def _table(eff: pl.DataFrame, observed_keys: pl.Series) -> Table:
    """The index of effects already by partition and offset."""
    n = eff.height
    if eff["kh"].null_count():  # the checker is unknown, saying so
        raise ValueError(
            f"{eff['kh'].null_count():,} records of the table act on no key (a null key): the "
            "prefix index judges keyed records only"
        )
    hashes = eff["kh"].cast(pl.UInt64).to_numpy().astype(np.uint64, copy=False)
    found = hash_order(hashes)
    if found is None:  # the checker is unknown, saying so
        raise ValueError(
            f"{n:,} records in one table: the prefix index packs a key hash's high bits and a "
            "position in 64 bits (fewer than 2**48 records)"
        )
    # the records in key order, each key's in position order: one sort of packed integers
    order, sorted_kh = found
    by_key = order.astype(np.int64)
    first = np.empty(n, dtype=bool)
    first[:1] = True
    np.not_equal(sorted_kh[1:], sorted_kh[:-1], out=first[1:])
    own = sorted_kh[first]  # the table's keys, ascending
    observed = observed_keys.cast(pl.UInt64).to_numpy().astype(np.uint64, copy=False)
    keys = sorted_unique(np.concatenate([own, observed]))
    kid = np.empty(n, dtype=np.int64)
    kid[by_key] = np.searchsorted(keys, own)[np.cumsum(first) - 1]
    val = as_ids(eff["vh"])
    part = eff["partition"].to_numpy().astype(np.int64, copy=False)
    change = np.flatnonzero(np.r_[True, part[1:] != part[:-1]]) if n else np.array([], int)
    ends = np.r_[change[1:], n] if n else np.array([], int)
    bounds = {int(part[s]): (int(s), int(e)) for s, e in zip(change, ends, strict=True)}
    prev = np.full(n, ABSENT, dtype=np.int64)
    next_of_key = np.full(n, n, dtype=np.int64)
    if n:
        same = ~first[1:]  # record by_key[i + 1] follows by_key[i], of the same key
        before, after = by_key[:-1][same], by_key[1:][same]
        prev[after] = val[before]
        next_of_key[before] = after
    part_of = np.full(len(keys), -1, dtype=np.int64)
    part_of[kid] = part
    offsets = eff["offset"].to_numpy().astype(np.int64, copy=False)
    last = np.r_[(part[1:] != part[:-1]) | (offsets[1:] != offsets[:-1]), True] if n else part
    return Table(
        keys,
        kid,
        val,
        prev,
        offsets,
        eff["row"].to_numpy().astype(np.int64, copy=False),
        bounds,
        part_of,
        by_key,
        np.asarray(last, dtype=bool),
        next_of_key,
    )
