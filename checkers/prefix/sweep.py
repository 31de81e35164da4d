"""prefix: the black-box judgement of an upsert sink — every observed state of a table is the
upsert of *some* per-partition prefix of the input, the prefixes never go back, and after
catch-up the state is the upsert of the whole input. No bindings are needed: only the input
(each record's effect on the table, :mod:`sealcheck.core.effects`) and a sequence of observed
states (key -> value maps, given as their changes).

Per partition, a *cut* ``c`` applies the partition's first ``c`` records; at cut ``c`` a key
holds the effect of its last record before the cut (a value; absent for a delete or no
record). A state is explained by a cut when every input key of the partition holds there what
the state shows. Cuts are not unique, so each state takes the smallest cut not below the
previous state's: a later state can then only be refused when no prefix at all explains it.

The search is one forward sweep per partition. A mismatch counter holds how many of the
partition's keys differ between the state and the cut; a new state changes it only at the keys
it changes (states are applied as diffs), and advancing the cut by one record changes it by
``[new value != shown] - [old value != shown]`` for that record's key — computed a chunk at a
time with numpy, so 10 million records cost a few vectorised passes, not a Python loop. The
first cut where the counter is zero is the state's cut. Nothing is mutated until a cut is found,
so a state no cut explains leaves the sweep where it was (the state is reported, and the next
one is judged from the same cut).

Values are compared by their 64-bit hashes, as every checker does
(:mod:`sealcheck.checkers.frames`). When no cut exists, :mod:`.explain` names a
smallest set of keys that no cut satisfies together, with the offsets that explain each.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import polars as pl

from sealcheck.checkers.frames import sort_runs
from sealcheck.checkers.prefix.explain import (
    Conflict,
    KeyStory,
    Partition,
    conflict,
    spans_of,
    story,
)
from sealcheck.checkers.prefix.index import ABSENT, MANY, Table, index

_FIRST_CHUNK = 4096
_MAX_CHUNK = 1 << 20


@dataclass
class Judgement:
    """What the sweep found for one table.

    ``cuts[state][partition]`` is the number of the partition's records applied by the
    smallest explaining cut (None: no cut explains the state there). Conflicts, invented keys
    and the like keep their first ``limit`` examples; their counts are complete."""

    states: list[int] = field(default_factory=list)
    cuts: dict[int, dict[int, int | None]] = field(default_factory=dict)
    partitions: dict[int, Partition] = field(default_factory=dict)
    conflicts: list[Conflict] = field(default_factory=list)
    conflict_count: int = 0
    #: ``reach[state][partition]``: how many records past its cut still explain the state;
    #: with :attr:`cuts`, a range of cuts that all explain it
    #: (:func:`sealcheck.checkers.prefix.check.one_cut`)
    reach: dict[int, dict[int, int]] = field(default_factory=dict)
    #: the same for the empty table before the first state (its cut: 0)
    reach_before: dict[int, int] = field(default_factory=dict)
    #: ``(state, kh)``: a key the state holds that no input record of the table has
    invented: list[tuple[int, int]] = field(default_factory=list)
    invented_count: int = 0
    #: ``(state, kh)``: a key shown with several values, or a value more than once
    not_a_map: list[tuple[int, int]] = field(default_factory=list)
    not_a_map_count: int = 0
    #: keys whose records span partitions: not judged (the verdict cannot be valid)
    split_keys: list[int] = field(default_factory=list)
    #: after catch-up, the keys whose final value is not the whole input's
    behind: list[KeyStory] = field(default_factory=list)
    behind_count: int = 0

    @property
    def valid(self) -> bool | None:
        """False on any anomaly; None when keys could not be judged; else True."""
        if self.conflict_count or self.invented_count or self.not_a_map_count:
            return False
        if self.behind_count:
            return False
        return None if self.split_keys else True


def _mix(x: np.ndarray) -> np.ndarray:
    """A second 64-bit hash of hashes (splitmix64's finaliser; wrapping)."""
    out: np.ndarray = x >> np.uint64(30)  # in place from here: one array, not six
    out ^= x
    with np.errstate(over="ignore"):
        out *= np.uint64(0xBF58476D1CE4E5B9)
        shifted = out >> np.uint64(27)
        out ^= shifted
        out *= np.uint64(0x94D049BB133111EB)
    np.right_shift(out, np.uint64(31), out=shifted)
    out ^= shifted
    return out


def observed_values(observed: pl.DataFrame) -> pl.DataFrame:
    """The changes of observed states (``state, kh, vh, diff``; any order, unconsolidated)
    as each key's shown value after every state that changed it: ``state, kh, value``
    (``value``: the hash as an int64 id, :data:`ABSENT` or :data:`MANY`), sorted by state.

    A key shows a value when exactly one value has multiplicity one and no other value is
    held; none held is absent; anything else is :data:`MANY`. Per key three running sums
    decide it, all linear in ``diff`` (so the changes need no consolidation and one sort by
    key and state): the count of values held ``Σ diff``, ``Σ diff·vh`` (the value itself when
    one is held once) and ``Σ diff·g(vh)`` with a second hash ``g``, which equals ``g`` of the
    second sum only when that holds (else two 64-bit hashes collide), and is 0 with it when
    nothing is held."""
    kh, state, value = _shown_by_key(observed)
    order = _stable_order(state)
    return pl.DataFrame(
        {"state": state[order], "kh": kh[order], "value": value[order]},
        schema={"state": pl.Int64, "kh": pl.UInt64, "value": pl.Int64},
    )


def _shown_by_key(observed: pl.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`observed_values` as arrays ``kh, state, value`` in key order (keys ascending),
    each key's states in order."""
    if observed.height == 0:
        return np.array([], np.uint64), np.array([], np.int64), np.array([], np.int64)
    per = sort_runs(observed.select("kh", "state", "vh", "diff"), "kh", "state")
    kh = per["kh"].cast(pl.UInt64).to_numpy().astype(np.uint64, copy=False)
    state = per["state"].to_numpy().astype(np.int64, copy=False)
    diff = per["diff"].to_numpy().astype(np.int64, copy=False)
    vh = per["vh"].cast(pl.UInt64).to_numpy().astype(np.uint64, copy=False)
    # Each (key, state)'s running sums over the key's changes so far: one running sum over
    # all rows, read at the last row of each (key, state), less its value before the key's
    # first row (no per-run sums, no second pass per key).
    n = len(kh)
    key_start = np.empty(n, dtype=bool)
    key_start[0] = True
    np.not_equal(kh[1:], kh[:-1], out=key_start[1:])
    run_end = np.empty(n, dtype=bool)
    run_end[-1] = True
    np.not_equal(state[1:], state[:-1], out=run_end[:-1])
    run_end[:-1] |= key_start[1:]
    ends = np.flatnonzero(run_end)
    base = np.flatnonzero(key_start)[np.cumsum(key_start)[ends] - 1]  # its key's first row
    d = diff.astype(np.uint64)  # wrapping: -1 is 2**64 - 1
    with np.errstate(over="ignore"):
        one = vh * d
        two = _mix(vh)
        two *= d
    count, total, check = (_running(x, ends, base) for x in (diff, one, two))
    kh, state = kh[ends], state[ends]
    value = total.view(np.int64).copy()
    none = (count == 0) & (total == 0) & (check == 0)
    single = (count == 1) & (check == _mix(total))
    value[none] = ABSENT
    value[~none & ~single] = MANY
    return kh, state, value


def _stable_order(state: np.ndarray) -> np.ndarray:
    """The stable sort order of ``state``: a radix sort when the states fit 16 bits (numpy
    sorts those in linear time), else a merge sort."""
    lo = int(state.min()) if len(state) else 0
    if len(state) and int(state.max()) - lo < 1 << 15:
        return np.argsort((state - lo).astype(np.int16), kind="stable")
    return np.argsort(state, kind="stable")


def _running(values: np.ndarray, ends: np.ndarray, base: np.ndarray) -> np.ndarray:
    """The sum of ``values`` over rows ``base[i]`` to ``ends[i]`` inclusive, for each ``i``
    (wrapping for unsigned values)."""
    total = np.cumsum(values, dtype=values.dtype)
    out: np.ndarray = total[ends]
    out -= total[base]
    out += values[base]
    return out


def _scan(t: Table, p: int, cut: int, mismatch: int, shown: np.ndarray) -> int | None:
    """The smallest cut ``>= cut`` of partition ``p`` where no key differs from ``shown``
    (``mismatch`` keys differ at ``cut``); None if none does."""
    if mismatch == 0:
        return cut
    s, e = t.bounds[p]
    pos, chunk = s + cut, _FIRST_CHUNK
    while pos < e:
        end = min(e, pos + chunk)
        want = shown[t.kid[pos:end]]
        delta = (t.val[pos:end] != want).astype(np.int64) - (t.prev[pos:end] != want)
        running = mismatch + np.cumsum(delta)
        zero = np.flatnonzero((running == 0) & t.last_of_offset[pos:end])  # whole records
        if len(zero):
            return pos + int(zero[0]) + 1 - s
        mismatch, pos, chunk = int(running[-1]), end, min(chunk * 2, _MAX_CHUNK)
    return None


def _reach(t: Table, p: int, cut: int, shown: np.ndarray) -> int:
    """How many records of partition ``p`` right after ``cut`` each leave the state shown
    explained (their value is what the state shows for their key)."""
    s, e = t.bounds[p]
    pos, chunk = s + cut, 64
    reach = e - s - cut
    while pos < e:
        end = min(e, pos + chunk)
        off = np.flatnonzero(t.val[pos:end] != shown[t.kid[pos:end]])
        if len(off):
            reach = pos + int(off[0]) - s - cut
            break
        pos, chunk = end, min(chunk * 4, _MAX_CHUNK)
    # a cut falls only after a record's last row (rows of one record share an offset)
    whole = np.flatnonzero(t.last_of_offset[s + cut : s + cut + reach])
    return int(whole[-1]) + 1 if len(whole) else 0


def judge(
    effects: pl.DataFrame, observed: pl.DataFrame, *, final: bool = True, limit: int = 10
) -> Judgement:
    """Judge one table: ``effects`` are its input records' effects (``partition, offset, kh,
    vh, row``; ``vh`` null: a delete; a record without effect on the table has no row),
    ``observed`` the changes of its observed states in order (``state, kh, vh, diff``).
    ``final``: the last state was observed after catch-up, so it must be the whole input's.
    """
    kh, state, value = _shown_by_key(observed)
    first = np.r_[True, kh[1:] != kh[:-1]] if len(kh) else np.array([], bool)
    t, split = index(effects, pl.Series("kh", kh[first], dtype=pl.UInt64))
    if split:
        keep = ~np.isin(kh, np.array(split, dtype=np.uint64))
        kh, state, value = kh[keep], state[keep], value[keep]
    out = Judgement(split_keys=split)
    shown = np.full(len(t.keys), ABSENT, dtype=np.int64)
    held = np.full(len(t.keys), ABSENT, dtype=np.int64)  # what each key holds at its cut
    cuts = {p: 0 for p in t.bounds}
    mismatch = {p: 0 for p in t.bounds}
    order = _stable_order(state)  # each state's changes together, states in order
    state_of = state[order]
    kid_all = np.searchsorted(t.keys, kh)[order]  # keys ascending: a merge-like pass
    value_all = value[order]
    states = state_of[np.r_[True, state_of[1:] != state_of[:-1]]].tolist() if len(order) else []
    starts = np.searchsorted(state_of, states, side="left")
    ends = np.searchsorted(state_of, states, side="right")
    for p, (s, e) in t.bounds.items():
        out.partitions[p] = Partition(p, e - s, t.offset[s:e])
    out.reach_before = {p: _reach(t, p, 0, shown) for p in t.bounds}
    for state, a, b in zip(states, starts, ends, strict=True):
        kid, value = kid_all[a:b], value_all[a:b]
        part = t.part_of[kid]
        invented = kid[(part < 0) & (value != ABSENT)]
        out.invented_count = _note(out.invented, out.invented_count, state, t, invented, limit)
        many = kid[value == MANY]
        out.not_a_map_count = _note(out.not_a_map, out.not_a_map_count, state, t, many, limit)
        for p in np.flatnonzero(np.bincount(part[part >= 0])).tolist():  # partitions
            mine = part == p
            k, v = kid[mine], value[mine]
            now = held[k]
            mismatch[p] += int((now != v).sum()) - int((now != shown[k]).sum())
            shown[k] = v
        shown[kid[part < 0]] = value[part < 0]
        out.states.append(state)
        found: dict[int, int | None] = {}
        for p in t.bounds:
            cut = _scan(t, p, cuts[p], mismatch[p], shown)
            found[p] = cut
            if cut is None:
                out.conflict_count += 1
                if len(out.conflicts) < limit:
                    out.conflicts.append(conflict(t, p, cuts[p], shown, state))
                continue
            t.apply(held, t.bounds[p][0] + cuts[p], t.bounds[p][0] + cut)
            cuts[p], mismatch[p] = cut, 0
        out.cuts[state] = found
        out.reach[state] = {p: _reach(t, p, c, shown) for p, c in found.items() if c is not None}
    if final:
        _judge_final(out, t, shown, limit)
    return out


def _note(
    found: list[tuple[int, int]], count: int, state: int, t: Table, kids: np.ndarray, limit: int
) -> int:
    """Keep the first ``limit`` ``(state, key hash)`` examples in ``found``; the new count."""
    found.extend((state, int(t.keys[k])) for k in kids[: max(0, limit - len(found))])
    return count + len(kids)


def _judge_final(out: Judgement, t: Table, shown: np.ndarray, limit: int) -> None:
    """After catch-up every input key holds its last record's effect."""
    kids = np.flatnonzero(t.part_of >= 0)  # the keys with an input record (np.unique: ~10x)
    off = kids[t.whole(kids) != shown[kids]]
    out.behind_count += len(off)
    told = off[: max(0, limit - len(out.behind))].tolist()
    spans = {p: spans_of(t, p, shown) for p in {int(t.part_of[k]) for k in told}}
    for k in told:
        p = int(t.part_of[k])
        out.behind.append(story(t, p, k, shown, spans[p][k]))
