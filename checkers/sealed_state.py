"""sealed_state: at every sealed step ``t``, ``data`` (and ``errors``) equal the model — the
topic replayed up to the offsets bound at ``t`` — compared change by change, step by step."""

from __future__ import annotations

from typing import Any

import polars as pl

from checkers.frames import (
    assign_steps,
    binding_ranges,
    classify,
    consolidate,
    model_updates,
    step_winners,
)
from checkers.inputs import RunData
from checkers.result import MAX_EXAMPLES, Anomaly, CheckResult, show

#: collection → (the winner column holding its key, the one holding its value)
COLUMNS = {"data": ("data_key", "data_value"), "errors": ("slot", "error_value")}


def _updates(frame: pl.DataFrame) -> list[dict[str, Any]]:
    return [{"value": show(r["value"]), "diff": r["diff"]} for r in frame.iter_rows(named=True)]


def check(run: RunData) -> CheckResult:
    """Compare the model's consolidated updates with the persisted ones at every sealed step."""
    res = CheckResult("sealed_state", True)
    bindings = run.collection("bindings")
    sealed = min(run.uppers.get("data", 0), run.uppers.get("bindings", 0))
    since = max(run.sinces.values(), default=0)
    stepped = assign_steps(classify(run.topic), binding_ranges(bindings, sealed))
    winners = step_winners(stepped, since)
    res.counts["steps"] = max(0, sealed - since)
    res.counts["records_bound"] = int(stepped["step"].is_not_null().sum())
    for name, (key, value) in COLUMNS.items():
        upper = min(run.uppers.get(name, 0), sealed)
        emitted = model_updates(winners, key, value).filter(pl.col("ts") < upper)
        model = consolidate(emitted.drop("partition", "offset"), since)
        found = consolidate(
            run.collection(name).filter(pl.col("ts") < run.uppers.get(name, 0)), since
        )
        res.counts[f"{name}_model_updates"] = model.height
        res.counts[f"{name}_persisted_updates"] = found.height
        joined = model.join(
            found, on=["key", "value", "ts"], how="full", coalesce=True, suffix="_found"
        ).with_columns(pl.col("diff").fill_null(0), pl.col("diff_found").fill_null(0))
        bad = joined.filter(pl.col("diff") != pl.col("diff_found"))
        places = bad.select("key", "ts").unique().sort("ts", "key")
        examples = []
        for r in places.head(MAX_EXAMPLES).iter_rows(named=True):
            at = bad.filter((pl.col("key") == r["key"]) & (pl.col("ts") == r["ts"]))
            expected = at.filter(pl.col("diff") != 0).select("value", "diff")
            got = at.filter(pl.col("diff_found") != 0).select(
                "value", pl.col("diff_found").alias("diff")
            )
            origin = emitted.filter((pl.col("key") == r["key"]) & (pl.col("ts") == r["ts"]))
            records = [
                {"partition": p, "offset": o}
                for p, o in origin.select("partition", "offset").unique().iter_rows()
            ]
            examples.append(
                Anomaly(
                    "state-mismatch",
                    name,
                    show(r["key"]),
                    r["ts"],
                    expected=_updates(expected),
                    found=_updates(got),
                    detail=f"at step {r['ts']} the model changes this key by the expected "
                    f"updates (from input records {records or 'none bound at this step'}) "
                    "but the store holds the found ones",
                    context=run.history.context_for_step(r["ts"]),
                )
            )
        res.add_bulk("state-mismatch", places.height, examples)
    return res
