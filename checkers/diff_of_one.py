"""diff_of_one: at every sealed time, every consolidated ``(key, value)`` has multiplicity 0
or 1 — checked at every change point, so a transient violation counts too (seed 004)."""

from __future__ import annotations

import polars as pl

from sealcheck.checkers.inputs import RunData
from sealcheck.checkers.multiplicity import COLLECTIONS, sealed_change_points
from sealcheck.checkers.result import MAX_EXAMPLES, NOTHING_SEALED, Anomaly, CheckResult, show


def check(run: RunData) -> CheckResult:
    """Find every ``(collection, key, value, ts)`` whose multiplicity is not 0 or 1."""
    if not any(run.uppers.get(c, 0) for c in COLLECTIONS):
        return CheckResult("diff_of_one", None, error=NOTHING_SEALED)
    res = CheckResult("diff_of_one", True)
    for name, cp in sealed_change_points(run):
        res.counts[f"{name}_change_points"] = cp.height
        bad = cp.filter(~pl.col("mult").is_in([0, 1])).with_columns(
            (pl.col("mult") - pl.col("diff")).alias("prev")
        )
        examples = []
        for r in bad.head(MAX_EXAMPLES).iter_rows(named=True):
            key, value = run.lookup(name, r["kh"], r["vh"])
            examples.append(
                Anomaly(
                    "diff-not-0-or-1",
                    name,
                    show(key),
                    r["ts"],
                    expected="multiplicity 0 or 1",
                    found=r["mult"],
                    detail=f"value {show(value)!r} has multiplicity {r['mult']} from step "
                    f"{r['ts']} (was {r['prev']}): it was "
                    + (
                        "added more often than retracted"
                        if r["mult"] > 1
                        else "retracted more often than added"
                    ),
                    context=run.context_for_step(r["ts"]),
                )
            )
        res.add_bulk("diff-not-0-or-1", bad.height, examples)
    return res
