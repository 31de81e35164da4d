"""unique_key: at every sealed time, each key of a collection maps to at most one value."""

from __future__ import annotations

import polars as pl

from sealcheck.checkers.frames import run_ends, segmented_cum_sum, sort_runs
from sealcheck.checkers.inputs import RunData
from sealcheck.checkers.multiplicity import COLLECTIONS
from sealcheck.checkers.result import MAX_EXAMPLES, NOTHING_SEALED, Anomaly, CheckResult, show


def live_counts(cp: pl.DataFrame) -> pl.DataFrame:
    """Per key and time at which its number of live values changes: ``kh, ts, live``.

    A value becomes live when its multiplicity leaves 0 and dies when it returns to 0; the
    changes are summed per key in time order (a running sum; ``cp`` is sorted by key and time
    unless it already is: :meth:`RunData.change_points_by_key`)."""
    prev = pl.col("mult") - pl.col("diff")
    delta = (pl.col("mult") != 0).cast(pl.Int32) - (prev != 0).cast(pl.Int32)
    changes = cp.select("kh", "ts", delta.alias("delta")).filter(pl.col("delta") != 0)
    return (
        sort_runs(changes, "kh", "ts")
        .lazy()
        .with_columns(segmented_cum_sum("delta", "kh").alias("live"))
        .filter(run_ends("kh", "ts"))
        .select("kh", "ts", "live")
        .collect()
    )


def check(run: RunData) -> CheckResult:
    """Count, per key and change time, the values alive; more than one is a violation."""
    if not any(run.uppers.get(c, 0) for c in COLLECTIONS):
        return CheckResult("unique_key", None, error=NOTHING_SEALED)
    res = CheckResult("unique_key", True)
    for name in COLLECTIONS:
        live = live_counts(run.change_points_by_key(name))
        bad = live.filter(pl.col("live") > 1)
        res.counts[f"{name}_keys"] = int(live.select(run_ends("kh").sum()).item())
        examples = [
            Anomaly(
                "key-with-two-values",
                name,
                show(run.lookup(name, r["kh"])[0]),
                r["ts"],
                expected="at most one value",
                found=[str(v["value"]) for v in run.live_values(name, r["kh"], r["ts"])],
                detail=f"{r['live']} values live at step {r['ts']}: a new value was added "
                "without retracting the old one",
                context=run.context_for_step(r["ts"]),
            )
            for r in bad.head(MAX_EXAMPLES).iter_rows(named=True)
        ]
        res.add_bulk("key-with-two-values", bad.height, examples)
    return res
