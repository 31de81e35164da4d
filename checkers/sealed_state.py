"""sealed_state: at every sealed step ``t``, ``data`` (and ``errors``) equal the model — the
topic replayed up to the offsets bound at ``t`` — compared change by change, step by step."""

from __future__ import annotations

from typing import Any

import polars as pl

from checkers.frames import (
    consolidate,
    h,
    model_updates,
    slot_bytes,
)
from checkers.inputs import RunData
from checkers.result import MAX_EXAMPLES, Anomaly, CheckResult, show


def _record_value(run: RunData, collection: str, row: int) -> str | None:
    if collection == "data":
        return show(run.topic.row(row, named=True)["value"])
    hit = run.classified().filter(pl.col("row") == row)["error_value"]
    return show(hit[0]) if hit.len() else None


def _explain(
    run: RunData, name: str, bad: pl.DataFrame, emitted: pl.DataFrame, kh: int, ts: int
) -> Anomaly:
    at = bad.filter((pl.col("kh") == kh) & (pl.col("ts") == ts))
    expected: list[dict[str, Any]] = []
    records: list[dict[str, int]] = []
    for r in emitted.filter((pl.col("kh") == kh) & (pl.col("ts") == ts)).iter_rows(named=True):
        rec = run.topic.row(int(r["row"]), named=True)
        records.append({"partition": rec["partition"], "offset": rec["offset"]})
        expected.append({"value": _record_value(run, name, int(r["row"])), "diff": r["diff"]})
    found = [
        {"value": show(run.lookup(name, kh, r["vh"])[1]), "diff": r["diff_found"]}
        for r in at.filter(pl.col("diff_found") != 0).iter_rows(named=True)
    ]
    key = run.lookup(name, kh)[0]
    if key is None and records:  # nothing persisted under this key: name it from the input
        raw = run.topic.row(_row_of(run, records[0]), named=True)["key"]
        key = raw if name == "data" else b"(errors key of) " + (raw or b"null")
    return Anomaly(
        "state-mismatch",
        name,
        show(key),
        ts,
        expected=expected,
        found=found,
        detail=f"at step {ts} the model changes this key by the expected updates (written by "
        f"input records {records or 'none bound at this step'}) but the store holds the "
        "found ones",
        context=run.history.context_for_step(ts),
    )


def _row_of(run: RunData, rec: dict[str, int]) -> int:
    hit = run.classified().filter(
        (pl.col("partition") == rec["partition"]) & (pl.col("offset") == rec["offset"])
    )["row"]
    return int(hit[0])


def check(run: RunData) -> CheckResult:
    """Compare the model's consolidated updates with the persisted ones at every sealed step."""
    res = CheckResult("sealed_state", True)
    sealed = min(run.uppers.get("data", 0), run.uppers.get("bindings", 0))
    since = max(run.sinces.values(), default=0)
    winners = run.winners()
    res.counts["steps"] = max(0, sealed - since)
    res.counts["records_bound"] = run.bound_records
    error_rows = winners.filter(pl.col("prev_evh").ne_missing(pl.col("evh")))["row"]
    slot_kh = (
        run.topic.with_row_index("row")
        .filter(pl.col("row").is_in(error_rows.implode()))
        .select("row", h(slot_bytes()).alias("skh"))
    )
    for name in ("data", "errors"):
        upper = min(run.uppers.get(name, 0), sealed)
        emitted = model_updates(winners, name, slot_kh).filter(pl.col("ts") < upper)
        # One retraction and one insertion per slot and step, of different values: the model's
        # updates are already consolidated unless compaction merges steps at `since`.
        model = (
            consolidate(emitted, since) if since > 0 else emitted.select("kh", "vh", "ts", "diff")
        )
        found = run.change_points(name).select("kh", "vh", "ts", "diff")  # consolidated
        res.counts[f"{name}_model_updates"] = model.height
        res.counts[f"{name}_persisted_updates"] = found.height
        joined = model.join(
            found, on=["kh", "vh", "ts"], how="full", coalesce=True, suffix="_found"
        ).with_columns(pl.col("diff").fill_null(0), pl.col("diff_found").fill_null(0))
        bad = joined.filter(pl.col("diff") != pl.col("diff_found"))
        places = bad.select("kh", "ts").unique().sort("ts", "kh")
        examples = [
            _explain(run, name, bad, emitted, r["kh"], r["ts"])
            for r in places.head(MAX_EXAMPLES).iter_rows(named=True)
        ]
        res.add_bulk("state-mismatch", places.height, examples)
    return res
