"""sealed_state: at every sealed step ``t``, ``data`` (and ``errors``) equal the model — the
topic replayed up to the offsets bound at ``t`` — compared change by change, step by step.

Both sides start empty, so equal states at every step is the same as equal changes at every
step. The changes are compared per step by multiset fingerprint
(:func:`checkers.frames.fingerprints`); only the steps whose fingerprints differ are joined
update by update, to say what differs.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from checkers.frames import consolidate, fingerprints, pair_hash, signed
from checkers.inputs import RunData
from checkers.replay import error_bytes, model_fingerprints, model_updates, reason_text
from checkers.result import MAX_EXAMPLES, Anomaly, CheckResult, show


def _record_value(run: RunData, collection: str, row: int) -> str | None:
    rec = run.topic_row(row)
    if collection == "data":
        return show(rec["value"])
    reason = run.classified().slice(row, 1).with_columns(reason_text().alias("text"))
    if reason["text"][0] is None:
        return None
    err = pl.DataFrame([rec]).select(error_bytes(pl.lit(reason["text"][0])).alias("e"))
    return show(err["e"][0])


def _explain(
    run: RunData, name: str, bad: pl.DataFrame, emitted: pl.DataFrame, kh: int, ts: int
) -> Anomaly:
    at = bad.filter((pl.col("kh") == kh) & (pl.col("ts") == ts))
    expected: list[dict[str, Any]] = []
    records: list[dict[str, int]] = []
    first_row: int | None = None
    for r in emitted.filter((pl.col("kh") == kh) & (pl.col("ts") == ts)).iter_rows(named=True):
        rec = run.topic_row(int(r["row"]))
        first_row = int(r["row"]) if first_row is None else first_row
        records.append({"partition": rec["partition"], "offset": rec["offset"]})
        expected.append({"value": _record_value(run, name, int(r["row"])), "diff": r["diff"]})
    found = [
        {"value": show(run.lookup(name, kh, r["vh"])[1]), "diff": r["diff_found"]}
        for r in at.filter(pl.col("diff_found") != 0).iter_rows(named=True)
    ]
    key = run.lookup(name, kh)[0]
    if key is None and first_row is not None:  # nothing persisted under this key: the input's
        raw = run.topic_row(first_row)["key"]
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


def _mismatched_steps(run: RunData, name: str, upper: int) -> list[int]:
    model = model_fingerprints(run.model_changes(name), upper)
    found = fingerprints(
        run.change_points(name).filter(pl.col("ts") < upper),
        signed(pair_hash("kh", "vh")),
    )
    both = model.join(found, on="ts", how="full", coalesce=True, suffix="_found")
    differ = both.filter(pl.col("fp").ne_missing(pl.col("fp_found")))
    return sorted(differ["ts"].to_list())


def check(run: RunData) -> CheckResult:
    """Compare the model's updates with the persisted ones at every sealed step."""
    res = CheckResult("sealed_state", True)
    sealed = min(run.uppers.get("data", 0), run.uppers.get("bindings", 0))
    since = max(run.sinces.values(), default=0)
    run.winners()
    res.counts["steps"] = max(0, sealed - since)
    res.counts["records_bound"] = run.bound_records
    for name in ("data", "errors"):
        upper = min(run.uppers.get(name, 0), sealed)
        steps = _mismatched_steps(run, name, upper)
        res.counts[f"{name}_persisted_updates"] = run.change_points(name).height
        res.counts[f"{name}_steps_differing"] = len(steps)
        if not steps:
            continue
        # Explain the differing steps update by update.
        in_steps = pl.col("ts").is_in(pl.Series(steps).implode())
        changes = run.model_changes(name)
        emitted = model_updates(changes.filter(pl.col("step").is_in(steps)))
        model = consolidate(emitted.filter(in_steps), since)
        found = run.change_points(name).filter(in_steps).select("kh", "vh", "ts", "diff")
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
