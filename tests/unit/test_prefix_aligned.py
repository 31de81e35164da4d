"""The ``prefix`` checker's shortcut for aligned tables (:func:`sealcheck.checkers.
prefix.check.one_cut`): when each table's own smallest cuts meet at every state, one cut per
partition explains both, so the tables need not be judged again as one. Both it and that full
judgement are checked against a search of every cut on random histories of two tables
sharing one input (a record may touch either table or both), and the shortcut is shown to be
taken on a correct run."""

from __future__ import annotations

from collections.abc import Callable
from itertools import product

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from sealcheck.checkers import run_checkers
from sealcheck.checkers.prefix.check import one_cut
from sealcheck.checkers.prefix.sweep import Judgement, judge
from tests.runs import build_run

# A record: (partition, data effect, errors effect); an effect is (key, value or None: a
# delete) or None (the record does not touch that table). Offsets count per partition.
Effect = tuple[str, str | None] | None
Rec = tuple[int, Effect, Effect]
#: the records, and the states of each table in order
History = tuple[list[Rec], list[list[dict[str, str]]]]

SCHEMA = {"row": pl.Int64, "partition": pl.Int64, "offset": pl.Int64, "kh": pl.UInt64}


def kh(key: str) -> int:
    return 1_000 + ord(key)


def vh(value: str) -> int:
    return 7_000_000 + ord(value)


def effects(records: list[Rec], table: int) -> pl.DataFrame:
    offsets: dict[int, int] = {}
    rows = []
    for row, rec in enumerate(records):
        o = offsets.get(rec[0], 0)
        offsets[rec[0]] = o + 1
        if (e := rec[1 + table]) is not None:
            rows.append((row, rec[0], o, kh(e[0]), None if e[1] is None else vh(e[1])))
    return pl.DataFrame(rows, schema={**SCHEMA, "vh": pl.UInt64}, orient="row")


def state_at(records: list[Rec], table: int, cuts: dict[int, int]) -> dict[str, str]:
    """The table after the records below offset ``cuts[p]`` of each partition ``p``."""
    out: dict[str, str | None] = {}
    seen: dict[int, int] = {}
    for rec in records:
        o = seen.get(rec[0], 0)
        seen[rec[0]] = o + 1
        if o < cuts.get(rec[0], 0) and (e := rec[1 + table]) is not None:
            out[e[0]] = e[1]
    return {k: v for k, v in out.items() if v is not None}


def observed(states: list[dict[str, str]]) -> pl.DataFrame:
    rows: list[tuple[int, int, int, int]] = []
    before: dict[str, str] = {}
    for i, s in enumerate(states):
        rows += [(i, kh(k), vh(v), -1) for k, v in before.items() if s.get(k) != v]
        rows += [(i, kh(k), vh(v), 1) for k, v in s.items() if before.get(k) != v]
        before = s
    schema = {"state": pl.Int64, "kh": pl.UInt64, "vh": pl.UInt64, "diff": pl.Int64}
    return pl.DataFrame(rows, schema=schema, orient="row")


@st.composite
def histories(draw: st.DrawFn) -> History:
    """Records whose data keys are ``a``-``c`` and errors keys ``x``-``z`` (each key in one
    partition), and for each table states cut at offsets drawn per state — the same for both
    tables or not, moving forward or not — sometimes with one key changed."""
    value = st.one_of(st.none(), st.sampled_from("123"))
    effect = st.one_of(st.none(), st.tuples(st.sampled_from("abc"), value))
    error = st.one_of(st.none(), st.tuples(st.sampled_from("xyz"), value))
    raw = draw(st.lists(st.tuples(st.integers(0, 1), effect, error), max_size=10))
    home: dict[str, int] = {}
    records: list[Rec] = []
    for p, d, e in raw:
        keys = [x[0] for x in (d, e) if x is not None]
        p = home.setdefault(keys[0], p) if keys else p
        if all(home.setdefault(k, p) == p for k in keys):
            records.append((p, d, e))
    sizes = {p: sum(1 for r in records if r[0] == p) for p in (0, 1)}
    tables: list[list[dict[str, str]]] = [[], []]
    for _ in range(draw(st.integers(1, 4))):
        cuts = [{p: draw(st.integers(0, n)) for p, n in sizes.items()} for _ in (0, 1)]
        if draw(st.booleans()):
            cuts[1] = cuts[0]
        for table in (0, 1):
            s = state_at(records, table, cuts[table])
            if draw(st.integers(0, 4)) == 0:  # one key changed: often explained by no cut
                k = draw(st.sampled_from("abc" if table == 0 else "xyz"))
                s = {**s, k: draw(st.sampled_from("123"))}
            tables[table].append(s)
    return records, tables


def aligned(records: list[Rec], tables: list[list[dict[str, str]]]) -> bool:
    """By brute force: some per-partition cut, never going back, explains both tables at
    every state."""
    sizes = {p: sum(1 for r in records if r[0] == p) for p in (0, 1)}
    grid = [
        dict(zip((0, 1), c, strict=True)) for c in product(*(range(sizes[p] + 1) for p in (0, 1)))
    ]
    reachable = [{0: 0, 1: 0}]
    for i in range(len(tables[0])):
        reachable = [
            c
            for c in grid
            if any(all(c[p] >= q[p] for p in c) for q in reachable)
            and all(state_at(records, t, c) == tables[t][i] for t in (0, 1))
        ]
        if not reachable:
            return False
    return True


def judged_alone(records: list[Rec], tables: list[list[dict[str, str]]]) -> dict[str, Judgement]:
    return {
        name: judge(effects(records, t), observed(tables[t]), final=False)
        for t, name in enumerate(("data", "errors"))
    }


def every_history(test: Callable[[History], None]) -> Callable[[], None]:
    """``test`` as a property over 400 random histories of two tables sharing an input."""
    property_: Callable[[], None] = settings(max_examples=400, deadline=None)(
        given(histories())(test)
    )
    return property_


def judged_as_one(records: list[Rec], tables: list[list[dict[str, str]]]) -> Judgement:
    return judge(
        pl.concat([effects(records, 0), effects(records, 1)]),
        pl.concat([observed(tables[0]), observed(tables[1])]),
        final=False,
    )


@every_history
def test_what_the_shortcut_proves_a_search_of_every_cut_confirms(
    history: History,
) -> None:
    records, tables = history
    judged = judged_alone(records, tables)
    if not all(j.valid for j in judged.values()):
        return  # the tables are judged together only when each alone is valid
    if one_cut(judged, 0, len(tables[0])):
        assert aligned(records, tables), (records, tables)


@every_history
def test_both_tables_judged_as_one_find_what_a_search_of_every_cut_finds(
    history: History,
) -> None:
    records, tables = history
    if not all(j.valid for j in judged_alone(records, tables).values()):
        return  # the tables are judged together only when each alone is valid
    found = judged_as_one(records, tables).conflict_count == 0
    assert found == aligned(records, tables), (records, tables)


def test_a_cut_never_splits_a_record_that_touches_both_tables() -> None:
    """A record (partition 1, offset 3) sets data a=2 and errors z=2; at the last state data
    shows a=2 and errors nothing: no cut of whole records explains both (found by a review:
    the cut used to fall between the record's two rows)."""
    records: list[Rec] = [(1, None, None), (1, None, None), (0, None, ("y", None))]
    records += [(1, None, None), (1, ("a", "2"), ("z", "2"))]
    tables = [[{}, {}, {"a": "2"}, {"a": "2"}], [{}, {}, {}, {"z": "2"}]]
    assert not aligned(records, tables)
    assert judged_as_one(records, tables).conflict_count == 1


def test_a_correct_run_with_errors_is_aligned_by_its_tables_own_cuts() -> None:
    pairs = [(b"a", b'{"v": 1}'), (b"b", b'{"v": 1}'), (b"a", b"{nope"), (b"c", b'{"v": 1}')]
    pairs += [(b"d", b'{"v": 1}'), (b"e", b"{nope")]
    res = run_checkers(build_run(pairs, partitions=1, step_size=2), ["prefix"])
    prefix = res.checkers["prefix"]
    assert prefix.valid is True, prefix.anomalies
    assert prefix.counts["tables_aligned_by_their_cuts"] == 1
