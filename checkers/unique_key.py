"""unique_key: at every sealed time, each key of a collection maps to at most one value."""

from __future__ import annotations

import polars as pl

from checkers.frames import segmented_cum_sum
from checkers.inputs import RunData
from checkers.multiplicity import sealed_change_points
from checkers.result import MAX_EXAMPLES, Anomaly, CheckResult, show


def live_values(run: RunData, name: str, cp: pl.DataFrame, kh: int, ts: int) -> list[str]:
    """The values of a key with non-zero multiplicity at ``ts`` (for explanations)."""
    at = (
        cp.filter((pl.col("kh") == kh) & (pl.col("ts") <= ts))
        .sort("ts")
        .unique(subset=["vh"], keep="last")
        .filter(pl.col("mult") != 0)
    )
    return sorted((show(run.lookup(name, kh, vh)[1]) or "") for vh in at["vh"].to_list())


def check(run: RunData) -> CheckResult:
    """Count, per key and change time, the values alive; more than one is a violation."""
    res = CheckResult("unique_key", True)
    for name, cp in sealed_change_points(run):
        delta = (pl.col("mult") != 0).cast(pl.Int64) - (pl.col("prev") != 0).cast(pl.Int64)
        live = (
            cp.with_columns(delta.alias("delta"))
            .filter(pl.col("delta") != 0)
            .group_by("kh", "ts")
            .agg(pl.col("delta").sum())
            .sort("kh", "ts")
            .with_columns(segmented_cum_sum("delta", "kh").alias("live"))
        )
        bad = live.filter(pl.col("live") > 1)
        res.counts[f"{name}_keys"] = live["kh"].n_unique()
        examples = [
            Anomaly(
                "key-with-two-values",
                name,
                show(run.lookup(name, r["kh"])[0]),
                r["ts"],
                expected="at most one value",
                found=live_values(run, name, cp, r["kh"], r["ts"]),
                detail=f"{r['live']} values live at step {r['ts']}: a new value was added "
                "without retracting the old one",
                context=run.history.context_for_step(r["ts"]),
            )
            for r in bad.head(MAX_EXAMPLES).iter_rows(named=True)
        ]
        res.add_bulk("key-with-two-values", bad.height, examples)
    return res
