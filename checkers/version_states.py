"""The ``versions`` checker's earlier states (issue 53): every state a row held before its last
one, judged against the versions that may have written it then.

:mod:`sealcheck.checkers.versions` judges the last state. Here each earlier state of a row —
from a step (or sampled state) where its row changed, in any column, until the next change —
must be explained: some record of the key puts the row's other columns there (the other
checkers judge which one), and the row's versioned columns are what a version writes for it:

* where its other columns changed, a version that may have written that step wrote it;
* where only its versioned columns changed (a backfill), a version that ran by then;

either read as some version that ran reads it (by default an older version's row reads with
the new columns null; ``migrate`` may say otherwise): a backfill is a commit outside any
batch, which a table may credit to the step before its writer started, beside the last
writes of the version before.

Which versions may have written a step follows from the history, incarnation by incarnation
(:class:`Stretch`): one may have written the steps sealed from the last reading before it
started to the second reading after it exited (the cut of
:func:`sealcheck.checkers.versions.handover`, one stretch at a time), one state later for an
output observed from outside. A step a rolled-back incarnation (an earlier version after a
later one) may have written is not judged: that version leaves the later one's columns as they
were, which no mapping says.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import overload

import orjson
import polars as pl

from sealcheck.checkers.frames import change_points, h
from sealcheck.checkers.inputs import RunData
from sealcheck.checkers.result import MAX_EXAMPLES, Anomaly, show
from sealcheck.rundir.history import History
from sealcheck.rundir.names import SUT_EXIT, SUT_START

KIND = "versioned-column-mismatch"


@dataclass(frozen=True)
class Stretch:
    """One incarnation, its version and the steps it may have written."""

    incarnation: int
    version: str
    #: the data upper of the last reading before it started: it wrote no step below
    lo: int
    #: the data upper of the second reading after it exited: it wrote no step at or above
    #: (None: it did not exit, or too few readings followed)
    hi: int | None
    #: an earlier version than one that started before it (``order``)
    rolled_back: bool

    @overload
    def may_write(self, step: pl.Expr, shift: int) -> pl.Expr: ...
    @overload
    def may_write(self, step: int, shift: int) -> bool: ...
    def may_write(self, step: pl.Expr | int, shift: int) -> pl.Expr | bool:
        """Whether it may have written ``step`` (a column of steps, or one); ``shift`` moves
        the upper bound later (one state, for an output observed from outside)."""
        inside = step >= self.lo
        return inside if self.hi is None else inside & (step < self.hi + shift)


def stretches(history: History, order: tuple[str, ...]) -> list[Stretch]:
    """Each incarnation that recorded its version, in start order (the module's docstring).
    ``order``: the versions in upgrade order (a version outside it is never rolled back)."""
    versions = history.versions()
    upper = 0
    lo: dict[int, int] = {}
    after_exit: dict[int, list[int]] = {}  # incarnation -> data uppers read since it exited
    for op in history.ops:
        value, f = op.get("value"), op.get("f")
        inc = value.get("incarnation") if isinstance(value, dict) else None
        if f == SUT_START and inc in versions and inc not in lo:
            lo[inc] = upper
        elif f == SUT_EXIT and inc in lo:
            after_exit.setdefault(inc, [])
        elif f == "uppers" and isinstance(value, dict):
            upper = int(value.get("data", 0) or 0)
            for seen in after_exit.values():
                seen.append(upper)
    out: list[Stretch] = []
    top = -1
    for inc in lo:  # in start order
        v = versions[inc]
        rank = order.index(v) if v in order else -1
        seen = after_exit.get(inc, [])
        hi = seen[1] if len(seen) > 1 else None
        out.append(Stretch(inc, v, lo[inc], hi, 0 <= rank < top))
        top = max(top, rank)
    return out


@dataclass
class Judged:
    """What the earlier states came to."""

    counts: dict[str, int] = field(default_factory=dict)
    #: states whose versioned columns no version that may have written them writes
    total: int = 0
    anomalies: list[Anomaly] = field(default_factory=list)


def _states(cp: pl.DataFrame, name: str) -> pl.DataFrame:
    """Per key and change (``kh, ts``): the hash of the one value live after it (0: none),
    from :func:`sealcheck.checkers.frames.change_points`; keys that ever held two values at
    once, or one twice, are left out (other checkers judge those)."""
    per = (
        cp.lazy()
        .with_columns(
            (
                ((pl.col("mult") > 0) & (pl.col("mult") == pl.col("diff"))).cast(pl.Int64)
                - (pl.col("mult") == 0).cast(pl.Int64)
            ).alias("d"),
            ((pl.col("diff") > 0) & (pl.col("mult") > 0)).alias("new"),
        )
        .group_by("kh", "ts")
        .agg(
            pl.col("d").sum(),
            pl.col("new").sum().alias("n"),
            pl.col("vh").filter(pl.col("new")).first().alias("ins"),
            pl.col("mult").max().alias("m"),
        )
        .sort("kh", "ts")
        .with_columns(pl.col("d").cum_sum().over("kh").alias("live"))
    )
    bad = per.group_by("kh").agg(
        ((pl.col("live").max() > 1) | (pl.col("n").max() > 1) | (pl.col("m").max() > 1)).alias(
            "bad"
        )
    )
    return (
        per.join(bad, on="kh")
        .filter(~pl.col("bad"))
        .sort("kh", "ts")  # a join keeps no order; the fill below reads each key in time order
        .with_columns(
            pl.when(pl.col("live") == 0)
            .then(pl.lit(0, pl.UInt64))
            .otherwise(pl.col("ins"))
            .forward_fill()
            .over("kh")
            .alias(name)
        )
        .select("kh", "ts", name)
        .collect()
    )


def canonical(raw: bytes | None, columns: list[str]) -> bytes:
    """The versioned ``columns`` of a JSON row in one spelling, a missing one null (a table
    without the column yet holds null there): what rows and mappings are compared by."""
    row = orjson.loads(raw) if raw else {}
    return orjson.dumps({c: row.get(c) for c in columns})


def judge_earlier(
    run: RunData, wanted: pl.DataFrame, columns: list[str], order: tuple[str, ...], shift: int
) -> Judged:
    """Judge every state of every key of ``data`` but its last (the module's docstring).
    ``wanted``: ``effects-versions.parquet``, holding the versioned ``columns``; ``shift``: 1
    for an output observed from outside (:meth:`Stretch.may_write`)."""
    assert run.versioned is not None
    out = Judged()
    runs = stretches(run.history, order)
    upper = run.uppers.get("data", 0)
    vers = (
        run.versioned.lazy()
        .with_row_index("row")
        .filter(pl.col("ts") < upper)
        .select("row", h("key").alias("kh"), h("value").alias("vh"), "ts", "diff", "value")
        .collect()
    )
    spell = {
        vh: canonical(raw, columns)
        for vh, raw in vers.unique("vh").select("vh", "value").iter_rows()
    }
    data = _states(run.change_points("data"), "dvh")
    extra = _states(change_points(vers, run.sinces.get("data", 0)), "xvh")
    events = (
        data.join(extra, on=["kh", "ts"], how="full", coalesce=True)
        .sort("kh", "ts")
        .with_columns(pl.col("dvh").is_not_null().alias("rewrote"))
        .with_columns(pl.col("dvh", "xvh").forward_fill().over("kh"))
        .with_columns(pl.col("ts").shift(-1).over("kh").alias("until"))
        .filter(pl.col("until").is_not_null() & (pl.col("dvh") != 0) & (pl.col("xvh") != 0))
    )
    if not events.height:
        out.counts["earlier_states_judged"] = 0
        return out
    step = pl.col("ts")
    flags = []
    for i, v in enumerate(dict.fromkeys(s.version for s in runs)):
        mine = [s for s in runs if s.version == v]
        wrote = pl.any_horizontal([s.may_write(step, shift) for s in mine])
        ran = pl.any_horizontal([step >= s.lo for s in mine])
        flags.append((v, wrote.alias(f"w{i}"), ran.alias(f"r{i}"), i))
    rolled = [s.may_write(step, shift) for s in runs if s.rolled_back]
    events = events.with_columns(
        *[w for _, w, _, _ in flags],
        *[r for _, _, r, _ in flags],
        (pl.any_horizontal(rolled) if rolled else pl.lit(False)).alias("rolled"),
    )
    out.counts["earlier_states_not_judged_rollback"] = events.filter("rolled").height
    events = events.filter(~pl.col("rolled"))
    canon = pl.DataFrame(
        {"vh": list(spell), "canon": list(spell.values())},
        schema={"vh": pl.UInt64, "canon": pl.Binary},
    )
    values = wanted["value"].unique().to_list()  # few: the versioned columns' values
    wants = wanted.select("row", "version", "to", "value").join(
        pl.DataFrame(
            {"value": values, "w": [canonical(b, columns) for b in values]},
            schema={"value": pl.Binary, "w": pl.Binary},
        ),
        on="value",
    )
    by = pl.lit(False)
    to = pl.lit(False)
    # a row whose other columns changed there is its writer's; one whose versioned columns
    # alone changed, a backfill of a row some version wrote before; either read as any
    # version that ran reads it (a backfill is credited to a step before its writer ran)
    for v, _, _, i in flags:
        may = pl.when("rewrote").then(pl.col(f"w{i}")).otherwise(pl.col(f"r{i}"))
        by = by | ((pl.col("version") == v) & may)
        to = to | (pl.col("to") == v)
    recs = run.effects("data").select("kh", pl.col("vh").alias("dvh"), "row")
    cands = (
        events.join(canon.rename({"vh": "xvh"}), on="xvh")
        .join(recs, on=["kh", "dvh"])
        .join(wants, on="row")
        .filter(by & to)
        .group_by("kh", "ts")
        .agg(
            pl.col("until").first(),
            pl.col("canon").first(),
            (pl.col("w") == pl.col("canon")).any().alias("ok"),
            pl.col("row").first().alias("record"),
            pl.struct("row", "version", "w").alias("options"),
        )
    )
    out.counts["earlier_states_judged"] = cands.height
    out.counts["earlier_states_not_mapped"] = events.height - cands.height
    wrong = cands.filter(~pl.col("ok")).sort("ts", "kh")
    out.total = wrong.height
    for k in wrong.head(MAX_EXAMPLES).iter_rows(named=True):
        out.anomalies.append(_anomaly(run, k, runs, shift))
    return out


def _anomaly(run: RunData, k: dict[str, object], runs: list[Stretch], shift: int) -> Anomaly:
    """One earlier state whose versioned columns no version that may have written it writes."""
    ts, until = int(k["ts"]), int(k["until"])  # type: ignore[call-overload]
    unit = "step" if run.keeps_bindings else "state"
    record = int(k["record"])  # type: ignore[call-overload]
    opts = list(  # (v1, as v1 reads it) and (v1, as v2 does) may say the same
        {(o["version"], o["w"]): o for o in k["options"] if o["row"] == record}.values()  # type: ignore[attr-defined]
    )
    said = " or ".join(f"{o['version']}: {o['w'].decode()}" for o in opts)
    writes = " or ".join(f"{o['version']} writes {o['w'].decode()}" for o in opts)
    writers = [f"{s.version} (incarnation {s.incarnation})" for s in runs if s.may_write(ts, shift)]
    rec = run.topic_row(record)
    key = run.effect_key("data", record)
    found = bytes(k["canon"]).decode()  # type: ignore[call-overload]
    return Anomaly(
        KIND,
        "data",
        show(key),
        ts,
        expected=said,
        found=found,
        detail=(
            f"from {unit} {ts} until {unit} {until} the row held {found} beside the columns "
            f"record partition {rec['partition']} offset {rec['offset']} writes; only "
            f"{', '.join(dict.fromkeys(writers))} may have written it then, and "
            f"{writes} for it"
        ),
        context=run.context_for_step(ts),
    )
