"""unique_key: at every sealed time, each key of a collection maps to at most one value."""

from __future__ import annotations

import polars as pl

from checkers.frames import change_points
from checkers.inputs import RunData
from checkers.multiplicity import sealed_updates
from checkers.result import MAX_EXAMPLES, Anomaly, CheckResult, show


def live_values(cp: pl.DataFrame, key: bytes, ts: int) -> list[str]:
    """The values of ``key`` with non-zero multiplicity at ``ts`` (for explanations)."""
    at = (
        cp.filter((pl.col("key") == key) & (pl.col("ts") <= ts))
        .sort("ts")
        .unique(subset=["value"], keep="last")
        .filter(pl.col("mult") != 0)
    )
    return sorted((show(v) or "") for v in at["value"].to_list())


def check(run: RunData) -> CheckResult:
    """Count, per key and change time, the values alive; more than one is a violation."""
    res = CheckResult("unique_key", True)
    for name, updates, since in sealed_updates(run):
        cp = change_points(updates, since)
        delta = (pl.col("mult") != 0).cast(pl.Int64) - (pl.col("prev") != 0).cast(pl.Int64)
        live = (
            cp.with_columns(delta.alias("delta"))
            .filter(pl.col("delta") != 0)
            .group_by("key", "ts")
            .agg(pl.col("delta").sum())
            .sort("key", "ts")
            .with_columns(pl.col("delta").cum_sum().over("key").alias("live"))
        )
        bad = live.filter(pl.col("live") > 1)
        res.counts[f"{name}_keys"] = live["key"].n_unique()
        examples = [
            Anomaly(
                "key-with-two-values",
                name,
                show(r["key"]),
                r["ts"],
                expected="at most one value",
                found=live_values(cp, r["key"], r["ts"]),
                detail=f"{r['live']} values live at step {r['ts']}: a new value was added "
                "without retracting the old one",
                context=run.history.context_for_step(r["ts"]),
            )
            for r in bad.head(MAX_EXAMPLES).iter_rows(named=True)
        ]
        res.add_bulk("key-with-two-values", bad.height, examples)
    return res
