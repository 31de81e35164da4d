"""The prefix checker's sweep (:mod:`sealcheck.checkers.prefix.sweep`) on hand-made histories, each
anomaly with its explanation, and against a brute-force search of every cut on small inputs."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sealcheck.checkers.prefix import sweep as prefix
from sealcheck.checkers.prefix.explain import explain, feasible, spans_of
from sealcheck.checkers.prefix.index import ABSENT, MANY, index
from sealcheck.checkers.prefix.sweep import judge, observed_values

# A record: (partition, key, value); value None deletes. Offsets count per partition from 0.
Rec = tuple[int, str, str | None]
State = dict[str, str]


def kh(key: str) -> int:
    return 1_000 + ord(key[0]) * 100 + len(key)


def vh(value: str) -> int:
    return 7_000_000 + sum(ord(c) * 31**i for i, c in enumerate(value))


def effects(records: list[Rec]) -> pl.DataFrame:
    offsets: dict[int, int] = {}
    rows = []
    for row, (p, k, v) in enumerate(records):
        o = offsets.get(p, 0)
        offsets[p] = o + 1
        rows.append((row, p, o, kh(k), None if v is None else vh(v)))
    return pl.DataFrame(
        rows,
        schema={
            "row": pl.Int64,
            "partition": pl.Int64,
            "offset": pl.Int64,
            "kh": pl.UInt64,
            "vh": pl.UInt64,
        },
        orient="row",
    )


def observed(states: list[State]) -> pl.DataFrame:
    rows: list[tuple[int, int, int, int]] = []
    before: State = {}
    for i, s in enumerate(states):
        for k, v in before.items():
            if s.get(k) != v:
                rows.append((i, kh(k), vh(v), -1))
        for k, v in s.items():
            if before.get(k) != v:
                rows.append((i, kh(k), vh(v), 1))
        before = s
    schema = {"state": pl.Int64, "kh": pl.UInt64, "vh": pl.UInt64, "diff": pl.Int64}
    return pl.DataFrame(rows, schema=schema, orient="row")


def names(records: list[Rec]) -> dict[int, str]:
    return {kh(k): k for _, k, _ in records}


def told(records: list[Rec], states: list[State], final: bool = True) -> list[str]:
    out = judge(effects(records), observed(states), final=final)
    keyname = names(records)
    return [
        explain(c, [keyname[k.kh] for k in c.keys], out.partitions[c.partition])
        for c in out.conflicts
    ]


def test_a_consistent_history_is_valid_with_the_smallest_cuts():
    records: list[Rec] = [(0, "a", "1"), (0, "b", "1"), (0, "a", "2"), (1, "c", "1")]
    states = [{"a": "1"}, {"a": "1", "b": "1", "c": "1"}, {"a": "2", "b": "1", "c": "1"}]
    out = judge(effects(records), observed(states))
    assert out.valid is True
    assert [out.cuts[s] for s in out.states] == [{0: 1, 1: 0}, {0: 2, 1: 1}, {0: 3, 1: 1}]


def test_a_lost_update_is_caught_and_named_by_the_pair_of_keys():
    # a=2 (offset 2) is lost while c (offset 3, after it) is there
    records: list[Rec] = [(0, "a", "1"), (0, "b", "1"), (0, "a", "2"), (0, "c", "1")]
    states = [{"a": "1", "b": "1", "c": "1"}]
    [why] = told(records, states, final=False)
    assert why == (
        "a shows the value written at offset 0, overwritten at offset 2; c shows the value "
        "written at offset 3: no prefix of partition 0 explains both"
    )


def test_a_value_from_the_future_conflicts_with_a_key_still_absent():
    records: list[Rec] = [(0, "a", "1"), (0, "b", "1")]
    [why] = told(records, [{"b": "1"}], final=False)
    assert why == (
        "a is absent, as before its first record (offset 0); b shows the value written at "
        "offset 1: no prefix of partition 0 explains both"
    )


def test_a_state_that_goes_back_is_one_key_past_its_value():
    records: list[Rec] = [(0, "a", "1"), (0, "a", "2"), (0, "b", "1")]
    out = judge(effects(records), observed([{"a": "2"}, {"a": "1"}]), final=False)
    assert out.valid is False and out.cuts[1] == {0: None}
    [c] = out.conflicts
    assert explain(c, ["a"], out.partitions[0]) == (
        "a shows the value written at offset 0, overwritten at offset 1 (the previous state "
        "had already applied offset 1): no prefix of partition 0 reaching at least offset 1 "
        "(as the previous state) explains it"
    )


def test_a_duplicate_apply_leaves_a_stale_value_after_catch_up():
    # a replayed batch re-applies a=1 after a=2: the final state holds the stale value
    records: list[Rec] = [(0, "a", "1"), (0, "a", "2"), (0, "b", "1")]
    states = [{"a": "2"}, {"a": "1", "b": "1"}]
    out = judge(effects(records), observed(states))
    assert out.valid is False
    assert out.behind_count == 1 and out.behind[0].kh == kh("a")
    assert told(records, states) == [
        "a shows the value written at offset 0, overwritten at offset 1 (the previous state "
        "had already applied offset 1): no prefix of partition 0 reaching at least offset 1 "
        "(as the previous state) explains it"
    ]


def test_pairwise_compatible_keys_can_conflict_together():
    # A holds a at cuts 2..5, B holds b at 4..7, C holds v at 1..2 and 7..8: every two meet,
    # all three never do (f is a filler at cuts 5..9)
    records: list[Rec] = [
        (0, "C", "v"),
        (0, "A", "a"),
        (0, "C", "w"),
        (0, "B", "b"),
        (0, "f", "1"),
        (0, "A", "x"),
        (0, "C", "v"),
        (0, "B", "y"),
        (0, "C", "w"),
    ]
    out = judge(effects(records), observed([{"A": "a", "B": "b", "C": "v", "f": "1"}]), final=False)
    [c] = out.conflicts
    assert len(c.keys) == 3
    assert explain(c, ["k"] * 3, out.partitions[0]).endswith("explains them all")


def test_invented_keys_values_shown_twice_and_keys_across_partitions():
    records: list[Rec] = [(0, "a", "1"), (1, "a", "2"), (0, "b", "1")]
    rows = observed([{"b": "1", "z": "1"}])
    twice = pl.DataFrame(
        {"state": [0], "kh": [kh("b")], "vh": [vh("9")], "diff": [1]},
        schema=rows.schema,
    )
    out = judge(effects(records), pl.concat([rows, twice]))
    assert out.invented == [(0, kh("z"))] and out.invented_count == 1
    assert out.not_a_map == [(0, kh("b"))]
    assert out.split_keys == [kh("a")]
    assert out.valid is False
    alone = judge(effects(records), observed([{"b": "1"}]))
    assert alone.split_keys == [kh("a")] and alone.valid is None  # judged nothing of "a"


def test_shown_values_come_from_the_changes_with_their_multiplicities():
    changes = pl.DataFrame(
        {
            "state": [0, 0, 1, 1, 2, 2],
            "kh": [1, 2, 1, 1, 2, 2],
            "vh": [10, 20, 10, 11, 20, 20],
            "diff": [1, 1, -1, 1, 1, -2],
        },
        schema={"state": pl.Int64, "kh": pl.UInt64, "vh": pl.UInt64, "diff": pl.Int64},
    )
    got = {(s, k): v for s, k, v in observed_values(changes).iter_rows()}
    assert got == {(0, 1): 10, (0, 2): 20, (1, 1): 11, (2, 2): int(ABSENT)}
    twice = changes.with_columns(
        pl.when(pl.col("state") == 2).then(1).otherwise("diff").alias("diff")
    )  # state 2 holds 20 three times
    assert observed_values(twice)["value"][-1] == int(MANY)
    both = changes.filter(pl.col("state") < 1).vstack(
        pl.DataFrame({"state": [1], "kh": [1], "vh": [12], "diff": [1]}, schema=changes.schema)
    )  # state 1 holds 10 and 12
    assert observed_values(both)["value"][-1] == int(MANY)


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 4), st.integers(1, 3), st.integers(1, 3), st.integers(-2, 2)),
        max_size=30,
    )
)
def test_shown_values_equal_a_replay_of_the_changes(rows: list[tuple[int, int, int, int]]) -> None:
    # any order, unconsolidated: each key's value after every state that changes it
    changes = pl.DataFrame(
        rows,
        schema={"state": pl.Int64, "kh": pl.UInt64, "vh": pl.UInt64, "diff": pl.Int64},
        orient="row",
    )
    held: dict[int, dict[int, int]] = {}
    want: dict[tuple[int, int], int] = {}
    for state in sorted({r[0] for r in rows}):
        for _, k, v, d in (r for r in rows if r[0] == state):
            held.setdefault(k, {})[v] = held.setdefault(k, {}).get(v, 0) + d
        for k in {r[1] for r in rows if r[0] == state}:
            live = {v: m for v, m in held[k].items() if m}
            if not live:
                want[(state, k)] = int(ABSENT)
            elif len(live) == 1 and list(live.values()) == [1]:
                want[(state, k)] = next(iter(live))
            else:
                want[(state, k)] = int(MANY)
    got = {(s, k): v for s, k, v in observed_values(changes).iter_rows()}
    assert got == want


# -- against a brute-force search ---------------------------------------------------------


def upsert(records: list[Rec], p: int, cut: int) -> State:
    out: State = {}
    for _, k, v in [r for r in records if r[0] == p][:cut]:
        if v is None:
            out.pop(k, None)
        else:
            out[k] = v
    return out


def brute(records: list[Rec], states: list[State]) -> list[dict[int, int | None]]:
    parts = sorted({p for p, _, _ in records})
    keys = {p: {k for q, k, _ in records if q == p} for p in parts}
    size = {p: sum(1 for r in records if r[0] == p) for p in parts}
    cuts = dict.fromkeys(parts, 0)
    out = []
    for s in states:  # a repeated state is judged again: the same answer
        found: dict[int, int | None] = {}
        for p in parts:
            want = {k: v for k, v in s.items() if k in keys[p]}
            hit = next(
                (c for c in range(cuts[p], size[p] + 1) if upsert(records, p, c) == want), None
            )
            found[p] = hit
            if hit is not None:
                cuts[p] = hit
        out.append(found)
    return out


@st.composite
def histories(draw: st.DrawFn) -> tuple[list[Rec], list[State]]:
    keys = ["a", "b", "c", "d"][: draw(st.integers(1, 4))]
    value = st.one_of(st.none(), st.sampled_from(["1", "2", "3"]))
    records = draw(
        st.lists(st.tuples(st.integers(0, 1), st.sampled_from(keys), value), max_size=12)
    )
    # a key's records all in the partition of its first one
    home = {}
    records = [(home.setdefault(k, p), k, v) for p, k, v in records]
    states = []
    for _ in range(draw(st.integers(1, 4))):
        s: State = {}
        for p in (0, 1):
            mine = [r for r in records if r[0] == p]
            s |= upsert(records, p, draw(st.integers(0, len(mine))))
        if draw(st.booleans()):  # perturb one key: often no prefix explains it then
            k = draw(st.sampled_from(keys))
            v = draw(value)
            s = {**s, k: v} if v is not None else {x: y for x, y in s.items() if x != k}
        states.append(s)
    return records, states


@settings(max_examples=200, deadline=None)
@given(histories())
def test_the_sweep_finds_the_brute_forces_cuts(history: tuple[list[Rec], list[State]]):
    records, states = history
    if not records:
        return
    expect = brute(records, states)
    # a state equal to the one before it changes nothing, so it is not observed
    seen = [i for i, s in enumerate(states) if s != (states[i - 1] if i else {})]
    # in arrival order (sorted by the index) and in topic order (the sort skipped)
    for eff in (effects(records), effects(records).sort("partition", "offset")):
        out = judge(eff, observed(states), final=False)
        assert out.states == seen
        assert [out.cuts[i] for i in seen] == [expect[i] for i in seen], (records, states)
    last = states[-1]
    whole = {k: v for p in {r[0] for r in records} for k, v in upsert(records, p, 99).items()}
    keys = {k for _, k, _ in records}
    behind = sum(1 for k in keys if last.get(k) != whole.get(k))
    assert judge(effects(records), observed(states)).behind_count == behind


@settings(max_examples=200, deadline=None)
@given(histories())
def test_a_conflict_is_a_smallest_set_no_cut_satisfies(history: tuple[list[Rec], list[State]]):
    records, states = history
    if not records:
        return
    eff = effects(records)
    out = judge(eff, observed(states), final=False, limit=100)
    t, _ = index(eff, pl.Series([], dtype=pl.UInt64))
    for c in out.conflicts:
        s, e = t.bounds[c.partition]
        state = states[c.state]
        shown = np.full(len(t.keys), ABSENT, dtype=np.int64)
        for k, v in state.items():
            where = np.searchsorted(t.keys, kh(k))
            if where < len(t.keys) and t.keys[where] == kh(k):
                shown[where] = vh(v)
        spans = spans_of(t, c.partition, shown)
        chosen = [int(np.searchsorted(t.keys, k.kh)) for k in c.keys]
        n = e - s
        assert not feasible([spans[k] for k in chosen], c.since, n)
        for k in chosen:  # every key is needed
            assert feasible([spans[x] for x in chosen if x != k], c.since, n)
        smallest = next(
            size
            for size in range(1, len(spans) + 1)
            if any(
                not feasible([spans[k] for k in group], c.since, n)
                for group in combinations(spans, size)
            )
        )
        assert len(chosen) == smallest or (smallest > 2 and len(chosen) >= smallest)


def test_a_table_without_input_records_holds_nothing_after_catch_up():
    empty = effects([])
    assert judge(empty, observed([])).valid is True
    out = judge(empty, observed([{"z": "1"}]))
    assert out.valid is False and out.invented == [(0, kh("z"))]


def test_the_second_hash_is_splitmix64s_finaliser() -> None:
    def reference(x: int) -> int:
        m = (1 << 64) - 1
        x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & m
        x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & m
        return x ^ (x >> 31)

    values = [0, 1, 2**63, 2**64 - 1, 0x5EA1C4EC, 123456789123456789]
    got = prefix._mix(np.array(values, dtype=np.uint64))
    assert got.tolist() == [reference(v) for v in values]


def test_a_record_with_no_key_is_refused_by_the_index() -> None:
    # a null key hash would otherwise be taken for some key: the checker says it cannot judge
    effects = pl.DataFrame(
        {
            "row": [0, 1, 2],
            "partition": [0, 0, 0],
            "offset": [0, 1, 2],
            "kh": pl.Series([5, None, 7], dtype=pl.UInt64),
            "vh": pl.Series([1, 2, 3], dtype=pl.UInt64),
        }
    )
    with pytest.raises(ValueError, match="1 records of the table act on no key"):
        index(effects, pl.Series("kh", [5], dtype=pl.UInt64))
