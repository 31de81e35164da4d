"""versions: the columns a system's versions do not all write — the column release 2 adds —
hold, in the last state, what the version that wrote each row says (issue 53).

The other checkers judge every other column (the harness splits these off the export:
:mod:`sealcheck.rundir.version_effects`). Here, each key of the last state (of a run that
caught up) is judged by its last record: its row's versioned columns must be the ones some
version writes for that record (``effects-versions.parquet``: a row of an earlier version as
the last version reads it — by default, the new columns null). Which versions may have
written the row follows from the step (or, for an output without bindings, the state) its
row last changed at, in any column, and the history:

* a row that last changed at the *cut* or later — the data upper of the second ``uppers`` op
  after the last incarnation of another version exited, so read after that exit — was
  written by the last version: it must hold that version's columns;
* a row that last changed before the cut may have been written by any version that ran —
  unless a rollback happened (an earlier version ran after a later one): that version leaves
  the later one's columns as they were, which no mapping says, so those keys are not judged;
* a run that ended on an earlier version than one that ran judges nothing here (not
  applicable, saying why).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import orjson
import polars as pl

from sealcheck.checkers.frames import h
from sealcheck.checkers.inputs import RunData
from sealcheck.checkers.result import MAX_EXAMPLES, NOTHING_SEALED, Anomaly, CheckResult, show
from sealcheck.checkers.version_states import KIND, canonical, judge_earlier, stretches
from sealcheck.rundir.history import History

NAME = "versions"


@dataclass(frozen=True)
class Handover:
    """What the history says of the versions that ran."""

    #: the versions that ran, in the order their stretches started (a rollback repeats one)
    ran: tuple[str, ...]
    #: the version of the last incarnation
    last: str
    #: records bound at this step or later were written by :attr:`last`; None: no cut known
    cut: int | None
    #: an earlier version ran after a later one
    rolled_back: bool


def handover(history: History, order: tuple[str, ...]) -> Handover | None:
    """The versions that ran and the cut (the module's docstring); None: no incarnation
    recorded its version. ``order``: the versions in upgrade order."""
    runs = stretches(history, order)
    if not runs:
        return None
    ran = tuple(v for v, _ in itertools.groupby(s.version for s in runs))
    last = runs[-1].version
    others = [s for s in runs if s.version != last]
    # the second reading after the last other incarnation's exit was *read* after it
    cut = others[-1].hi if others else 0
    return Handover(ran, last, cut, any(s.rolled_back for s in runs))


def _final(run: RunData) -> pl.DataFrame:
    """The last state's versioned columns per key: ``kh, key, found``."""
    assert run.versioned is not None
    upper = run.uppers.get("data", 0)
    live = (
        run.versioned.lazy()
        .filter(pl.col("ts") < upper)
        .group_by("key", "value")
        .agg(pl.col("diff").sum())
        .filter(pl.col("diff") > 0)
        .collect()
    )
    single = live.group_by("key").agg(pl.len().alias("n"), pl.col("value").first())
    return single.filter(pl.col("n") == 1).select(
        h("key").alias("kh"), "key", pl.col("value").alias("found")
    )


def _last_records(run: RunData) -> pl.DataFrame:
    """Per key of ``data``, its last record, when it upserts: ``kh, row`` (the records bound
    at sealed steps; for an output without bindings, every record: the run caught up)."""
    if run.keeps_bindings:
        w = run.winners("data").sort("slot", "step").group_by("slot").agg(pl.all().last())
        return w.filter(pl.col("dvh").is_not_null()).select(pl.col("slot").alias("kh"), "row")
    eff = run.effects("data").sort("kh", "offset", "partition").group_by("kh").agg(pl.all().last())
    return eff.filter(pl.col("vh").is_not_null()).select("kh", "row")


def _last_changes(run: RunData) -> pl.DataFrame:
    """Per key, the step (or state) its row last changed at, in any column: ``kh, step``."""
    assert run.versioned is not None
    upper = run.uppers.get("data", 0)
    both = pl.concat(
        [
            run.updates.lazy().filter(pl.col("collection") == "data").select("key", "ts"),
            run.versioned.lazy().select("key", "ts"),
        ]
    )
    return (
        both.filter(pl.col("ts") < upper)
        .group_by("key")
        .agg(pl.col("ts").max().alias("step"))
        .select(h("key").alias("kh"), pl.col("step").cast(pl.Int64))
        .collect()
    )


def check(run: RunData) -> CheckResult:
    """Judge the last state's versioned columns against the versions' mappings."""
    if run.version_effects is None:
        return CheckResult.not_applicable(
            NAME,
            "no versions of the system write rows of different shapes (no "
            "effects-versions.parquet): no column of one version's own to judge",
        )
    if run.versioned is None:
        return CheckResult(
            NAME, None, error="the export has no export/versioned.parquet: nothing was judged"
        )
    if not run.uppers.get("data", 0):
        return CheckResult(NAME, None, error=NOTHING_SEALED)
    wanted = run.version_effects.lazy().collect()
    order = tuple(dict.fromkeys(wanted["version"].to_list()))
    ho = handover(run.history, order)
    if ho is None:
        return CheckResult(NAME, None, error="no incarnation recorded its version: no cut")
    unknown = [v for v in ho.ran if v not in order]
    if unknown:
        return CheckResult(
            NAME, None, error=f"the history names versions its mapping lacks: {unknown}"
        )
    if ho.rolled_back and order.index(ho.last) < max(order.index(v) for v in ho.ran):
        return CheckResult.not_applicable(
            NAME,
            f"the run ended on {ho.last} after {', '.join(ho.ran)} ran (a rollback): {ho.last} "
            "leaves the columns only a later version writes as that version left them, which "
            "no version's mapping says",
        )
    if not run.history.caught_up():
        return CheckResult(
            NAME, None, error="the run did not catch up: its last state is not the whole input's"
        )
    res = CheckResult(NAME, True)
    keys = _last_records(run).join(_final(run), on="kh").join(_last_changes(run), on="kh")
    cut = _cut(run, ho)
    after = pl.col("step") >= cut if cut is not None else pl.lit(False)
    keys = keys.with_columns(after.fill_null(False).alias("after"))
    if ho.rolled_back:  # before the cut, a rolled-back version may have left anything
        res.counts["keys_not_judged_rollback"] = keys.filter(~pl.col("after")).height
        keys = keys.filter(pl.col("after"))
    # each version's row as the last version reads it
    cands = wanted.filter(pl.col("to") == ho.last).select("row", "version", "value")
    ran = set(ho.ran)
    total = judged = 0
    columns = sorted({c for raw in wanted["value"].head(1).to_list() for c in orjson.loads(raw)})
    absent = sorted(set(columns) - run.versioned_held)
    by_row: dict[int, list[tuple[str, bytes]]] = {}
    for r, v, w in cands.join(keys.select("row"), on="row", how="semi").iter_rows():
        by_row.setdefault(r, []).append((v, w))  # the keys' last records' alone
    wrong: list[tuple[dict[str, Any], list[tuple[str, bytes]], bytes]] = []
    for k in keys.iter_rows(named=True):
        options = [(v, w) for v, w in by_row.get(k["row"], []) if v in ran]
        if k["after"]:
            options = [(v, w) for v, w in options if v == ho.last]
        if not options:  # no version that ran maps that record to a row of ``data``
            res.counts["keys_not_mapped"] = res.counts.get("keys_not_mapped", 0) + 1
            continue
        judged += 1
        found = canonical(k["found"], columns)
        if any(canonical(w, columns) == found for _, w in options):
            continue
        total += 1
        wrong.append((k, options, found))
    res.counts["keys_judged"] = judged
    res.counts["keys_after_cut"] = keys.filter(pl.col("after")).height
    unread = _unread(cands.filter(pl.col("version") == ho.last)["value"], absent)
    if unread:  # the last version wrote it, yet no row was read holding it: its reading
        return CheckResult(
            NAME,
            None,
            counts=res.counts,
            error=f"no row of the export holds {', '.join(unread)}, which {ho.last} writes: "
            "the output does not read it (does its exclude name it? remove it from exclude)",
        )
    wrong.sort(key=lambda w: w[0]["step"] if isinstance(w[0]["step"], int) else 1 << 62)
    bad = [_anomaly(run, k, o, found, ho, absent) for k, o, found in wrong[:MAX_EXAMPLES]]
    # every earlier state (an output whose states have no moment in the run has no stretches)
    if run.states_timed:
        earlier = judge_earlier(run, wanted, columns, order, 0 if run.keeps_bindings else 1)
        res.counts.update(earlier.counts)
        total += earlier.total
        bad += earlier.anomalies
    # the earliest first, whichever state they are in: the first wrong write says the most
    bad.sort(key=lambda a: a.step if a.step is not None else 1 << 62)
    res.add_bulk(KIND, total, bad[:MAX_EXAMPLES])
    rows = run.versioned.lazy().select(pl.len()).collect().item()
    if not judged and not res.anomaly_counts and rows:
        why = "after the rollback no row changed at or after the cut" if ho.rolled_back else ""
        return CheckResult(
            NAME,
            None,
            counts=res.counts,
            error=f"no key of the last state was judged{': ' + why if why else ''}",
        )
    return res


def _unread(values: pl.Series, absent: list[str]) -> list[str]:
    """The ``absent`` columns (no row of the export holds them) that some of ``values`` (the
    last version's, JSON) sets: the table should hold them."""
    if not absent:
        return []
    found: set[str] = set()
    for raw in values.to_list():
        row = orjson.loads(raw)
        found |= {c for c in absent if row.get(c) is not None}
        if len(found) == len(absent):
            break
    return sorted(found)


def _cut(run: RunData, ho: Handover) -> int | None:
    """The first step (or state) only the last version can have written (None: none known).
    States taken from outside (no bindings) start one later: the first state taken after the
    other version's exit may hold its last writes, which no state showed while a batch was in
    flight. Tables judged alone, whose states are counted in versions, not in the observer's
    readings, have none."""
    if ho.cut is None or not run.states_timed:
        return None
    return ho.cut if run.keeps_bindings or ho.cut == 0 else ho.cut + 1


def _anomaly(
    run: RunData,
    k: dict[str, Any],
    options: list[tuple[str, bytes]],
    found: bytes,
    ho: Handover,
    absent: list[str],
) -> Anomaly:
    """One key whose versioned columns no version that may have written it writes."""
    step = k["step"] if isinstance(k["step"], int) else None
    unit = "step" if run.keeps_bindings else "state"
    rec = run.topic_row(int(k["row"]))
    where = f"partition {rec['partition']} offset {rec['offset']}"
    changed = f"its row last changed at {unit} {step} (its last record: {where})"
    if k["after"] and len(ho.ran) == 1:
        why = f"{changed}: only {ho.last} ran"
    elif k["after"]:
        why = (
            f"{changed}, sealed after every other version's incarnation had exited: "
            f"{ho.last} wrote it"
        )
    else:
        why = f"{changed}, which {' or '.join(ho.ran)} may have written"
    said = " or ".join(f"{v} writes {w.decode()}" for v, w in options)
    hint = (
        f"; no row of the export holds a column {', '.join(absent)} at all (if the "
        "output's exclude names it, remove it from exclude)"
        if absent
        else ""
    )
    return Anomaly(
        KIND,
        "data",
        show(k["key"]),
        step,
        expected=" or ".join(f"{v}: {w.decode()}" for v, w in options),
        found=found.decode(),
        detail=f"{why}; {said} for it, but the row holds {found.decode()}{hint}",
        context=run.context_for_step(step),
    )
