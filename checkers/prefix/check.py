"""prefix (black box): every sealed state of ``data`` and of ``errors`` is the upsert of some
per-partition prefix of the input, the prefixes never go back, and after catch-up the state is
the whole input's — judged from the input's effects and the output's states alone, without the
bindings (:mod:`.prefix`). Each table alone, then both together: one cut per partition must
explain both tables at each step (``tables-not-aligned`` otherwise), since every system today
commits a step's ``data`` and ``errors`` together, as ``sealed_state`` assumes.

It is the weaker check beside ``sealed_state`` (which knows, from the bindings, *which* prefix
each step must equal): on a run of a system that exports bindings, a prefix anomaly implies a
``sealed_state`` one. It is what is left to judge a sink that keeps no bindings. Keys whose
records span partitions cannot be judged per partition: the result is then unknown, saying how
many.
"""

from __future__ import annotations

import polars as pl

from sealcheck.checkers.frames import pair_hash
from sealcheck.checkers.inputs import RunData
from sealcheck.checkers.prefix.explain import explain, tell
from sealcheck.checkers.prefix.sweep import Judgement, judge
from sealcheck.checkers.result import MAX_EXAMPLES, NOTHING_SEALED, Anomaly, CheckResult, show

NAME = "prefix"
TABLES = ("data", "errors")


def _key(run: RunData, name: str, kh: int, row: int | None) -> str:
    """A key for people: its bytes from the output, else from an input record."""
    key, _ = run.lookup(name, kh)
    if key is None and row is not None and row >= 0:
        key = run.effect_key(name, row)
    return show(key) or f"<key hash {kh:#x}>"


def _report(run: RunData, res: CheckResult, name: str, j: Judgement) -> None:
    found = [
        Anomaly(
            "no-prefix",
            name,
            _key(run, name, c.keys[0].kh, c.keys[0].row) if c.keys else None,
            c.state,
            detail=explain(
                c, [_key(run, name, k.kh, k.row) for k in c.keys], j.partitions[c.partition]
            ),
            context={"partition": c.partition, **run.context_for_step(c.state)},
        )
        for c in j.conflicts
    ]
    res.add_bulk("no-prefix", j.conflict_count, found)
    for kind, found_at, count, detail in (
        ("invented-key", j.invented, j.invented_count,
         "the state holds a key that no input record puts into this table"),
        ("not-a-map", j.not_a_map, j.not_a_map_count, "several values"),
    ):  # fmt: skip
        keyed = [
            Anomaly(
                kind,
                name,
                _key(run, name, kh, None),
                state,
                detail=detail,
                context=run.context_for_step(state),
            )
            for state, kh in found_at
        ]
        res.add_bulk(kind, count, keyed)
    behind = []
    for k in j.behind:
        part = j.partitions[k.partition]
        who = _key(run, name, k.kh, k.row)
        last = j.states[-1] if j.states else None
        behind.append(
            Anomaly(
                "not-the-whole-input",
                name,
                who,
                last,
                detail=f"after catch-up {tell(k, who, part, 0)}, not its last record's effect",
                context=run.context_for_step(last),
            )
        )
    res.add_bulk("not-the-whole-input", j.behind_count, behind)


def _inputs(run: RunData, name: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A table's effects (``row, partition, offset, kh, vh``) and observed changes (``state,
    kh, vh, diff``: the export's steps)."""
    effects = run.effects(name).select("row", "partition", "offset", "kh", "vh")
    observed = run.change_points_by_key(name).select(
        pl.col("ts").cast(pl.Int64).alias("state"), "kh", "vh", pl.col("diff").cast(pl.Int64)
    )
    return effects, observed


def _tagged(frame: pl.DataFrame, name: str) -> pl.DataFrame:
    """``frame`` with each key hash made the pair (table, key): two tables as one key space."""
    return frame.with_columns(pair_hash(pl.lit(TABLES.index(name), pl.UInt64), "kh").alias("kh"))


def _aligned(run: RunData, res: CheckResult, judged: dict[str, Judgement]) -> None:
    """Both tables at each step are explained by *one* cut per partition (a step is a batch
    of both: every system today commits them together, as ``sealed_state`` assumes).

    Proven from each table's own cuts (``judged``) when it can be (:func:`one_cut`);
    otherwise both tables are judged again as one."""
    since = max(run.sinces.get(n, 0) for n in TABLES)  # steps one table merged: merged in both
    upper = min(run.uppers.get(n, 0) for n in TABLES)  # a step one table has not sealed yet
    if one_cut(judged, since, upper):
        res.counts["tables_aligned_by_their_cuts"] = 1
        return
    both = [_inputs(run, name) for name in TABLES]
    effects = pl.concat([_tagged(e, n) for (e, _), n in zip(both, TABLES, strict=True)])
    observed = pl.concat([_tagged(o, n) for (_, o), n in zip(both, TABLES, strict=True)])
    observed = observed.with_columns(pl.max_horizontal("state", pl.lit(since)).alias("state"))
    observed = observed.filter(pl.col("state") < upper)
    j = judge(effects, observed, final=False, limit=MAX_EXAMPLES)  # each table's end: judged
    if not j.conflict_count:
        return
    names: dict[int, tuple[str, str]] = {}
    for (e, _), table in zip(both, TABLES, strict=True):
        wanted = {k.kh for c in j.conflicts for k in c.keys}
        rows = _tagged(e, table).with_columns(pl.col("kh").alias("tagged"))
        for tagged, row in (
            rows.filter(pl.col("tagged").is_in(list(wanted)))
            .select("tagged", "row")
            .unique("tagged")
            .iter_rows()
        ):
            names[tagged] = (table, _key(run, table, _untagged(e, row), row))
    found = []
    for c in j.conflicts:
        told = [" ".join(names.get(k.kh, ("a", "key"))) for k in c.keys]
        first = names.get(c.keys[0].kh, (None, None)) if c.keys else (None, None)
        why = explain(c, told, j.partitions[c.partition])
        found.append(
            Anomaly(
                "tables-not-aligned",
                first[0],
                first[1],
                c.state,
                detail=f"{why} (both tables at step {c.state})",
                context={"partition": c.partition, **run.context_for_step(c.state)},
            )
        )
    res.add_bulk("tables-not-aligned", j.conflict_count, found)


def one_cut(judged: dict[str, Judgement], since: int, upper: int) -> bool:
    """Whether each table's own cuts already prove that one cut per partition explains every
    table at every state of ``[since, upper)`` (a state below ``since`` is taken at
    ``since``). False means only "not proven this way".

    A table's state is explained by its cut of ``c`` of its records and by the ``reach``
    records after it (:attr:`Judgement.reach`), so by every offset cut ``x`` (records below
    offset ``x`` applied) from one past its ``c``-th record's offset up to its
    ``c + reach + 1``-th's. Where those ranges of every table meet, at each state and
    partition, the smallest common ``x`` explains all of them, and it never goes back, since
    each table's cuts never do. A partition where a table has no record puts no bound on it."""
    states = sorted({max(s, since) for j in judged.values() for s in j.states})
    parts = {p for j in judged.values() for p in j.partitions}
    at: dict[str, int] = dict.fromkeys(judged, -1)  # index of each table's state in effect
    for state in (s for s in states if s < upper):
        for name, j in judged.items():
            while at[name] + 1 < len(j.states) and max(j.states[at[name] + 1], since) <= state:
                at[name] += 1
        for p in parts:
            lo, hi = 0, None
            for name, j in judged.items():
                part = j.partitions.get(p)
                if part is None:
                    continue
                now = j.states[at[name]] if at[name] >= 0 else None
                c = j.cuts[now].get(p) if now is not None else 0
                reach = (j.reach_before if now is None else j.reach.get(now, {})).get(p)
                if c is None or reach is None:
                    return False
                lo = max(lo, part.offset(c - 1) + 1 if c > 0 else 0)
                if c + reach < part.records:
                    end = part.offset(c + reach)
                    hi = end if hi is None else min(hi, end)
            if hi is not None and lo > hi:
                return False
    return True


def _untagged(effects: pl.DataFrame, row: int) -> int:
    return int(effects.filter(pl.col("row") == row)["kh"][0])


def check(run: RunData) -> CheckResult:
    """Judge ``data`` and ``errors`` as black boxes (see the module's docstring)."""
    if not any(run.uppers.get(c, 0) for c in TABLES):
        return CheckResult(NAME, None, error=NOTHING_SEALED)
    res = CheckResult(NAME, True)
    final = run.history.caught_up()
    split: list[str] = []
    judged: dict[str, Judgement] = {}
    for name in TABLES:
        j = judged[name] = judge(*_inputs(run, name), final=final, limit=MAX_EXAMPLES)
        res.counts[f"{name}_states_judged"] = len(j.states)
        res.counts[f"{name}_states_explained"] = sum(
            all(c is not None for c in j.cuts[s].values()) for s in j.states
        )
        _report(run, res, name, j)
        if j.split_keys:
            split.append(f"{len(j.split_keys):,} keys of {name}")
    if "errors" in run.unaligned:
        res.counts["tables_aligned_judged"] = 0  # states of one table fall between the other's
    elif res.valid is True and not split and run.effects("errors").height:
        _aligned(run, res, judged)
    if split and res.valid is not False:
        res.valid = None
        res.error = (
            f"{' and '.join(split)} have records in several partitions: no per-partition "
            "prefix can judge them"
        )
    res.counts["states_judged"] = len({s for j in judged.values() for s in j.states})
    res.counts["final_state_judged"] = int(final)
    if not run.keeps_bindings and res.valid is True:
        _observed_enough(run, res, final)
    return res


def _observed_enough(run: RunData, res: CheckResult, final: bool) -> None:
    """An output observed from outside (no bindings) was judged only as far as it was seen:
    unknown when the harness saw no state of the run's course, or never saw it settle."""
    seen = res.counts.get("states_judged", 0)
    if not final:
        res.valid = None
        res.error = (
            f"{seen} observed states fit the input, but the output never settled after "
            "healing: its last state was not judged as the whole input's"
        )
    elif seen < 2:
        res.valid = None
        res.error = (
            f"the harness saw {seen} state(s) of the output: too few to judge the run's course "
            "(sample the tables more often, or make the run longer)"
        )
