"""completeness (after the final catch-up): the final bindings equal the log end, every
acknowledged write is in the topic (else a *Kafka* anomaly: the pipeline is not blamed), and
the final ``data`` equals the model of the whole topic."""

from __future__ import annotations

import polars as pl

from checkers.frames import binding_ranges, h
from checkers.inputs import RunData
from checkers.result import MAX_EXAMPLES, Anomaly, CheckResult, show


def _final_bound(run: RunData) -> dict[int, int]:
    upper = run.uppers.get("data", 0)
    ranges = binding_ranges(run.collection("bindings"), upper).sort("partition", "ts")
    last = ranges.group_by("partition").agg(pl.col("end").last())
    return {int(p): int(e) for p, e in last.iter_rows()}


def _acknowledged(run: RunData, res: CheckResult) -> None:
    acked = run.history.acked.with_row_index("ack").with_columns(
        h("key").alias("akh"), h("value").alias("avh")
    )
    res.counts["acknowledged_writes"] = acked.height
    joined = acked.select("ack", "partition", "offset", "akh", "avh").join(
        run.classified().select("partition", "offset", "kh", "rvh", "row"),
        on=["partition", "offset"],
        how="left",
    )
    lost = joined.filter(pl.col("row").is_null())
    changed = joined.filter(
        pl.col("row").is_not_null()
        & (~pl.col("akh").eq_missing(pl.col("kh")) | ~pl.col("avh").eq_missing(pl.col("rvh")))
    )
    for kind, frame, what in (
        ("kafka-lost-write", lost, "acknowledged (acks=all) but absent from the topic"),
        ("kafka-changed-write", changed, "acknowledged, but the topic holds another record there"),
    ):
        examples = []
        for r in frame.head(MAX_EXAMPLES).iter_rows(named=True):
            ack = acked.row(int(r["ack"]), named=True)
            there = run.topic.row(int(r["row"]), named=True) if r["row"] is not None else None
            examples.append(
                Anomaly(
                    kind,
                    None,
                    show(ack["key"]),
                    None,
                    expected={
                        "partition": ack["partition"],
                        "offset": ack["offset"],
                        "value": show(ack["value"]),
                    },
                    found=None
                    if there is None
                    else {
                        "key": show(there["key"]),
                        "value": show(there["value"]),
                    },
                    detail=f"a Kafka anomaly, not the pipeline's: the write was {what}",
                )
            )
        res.add_bulk(kind, frame.height, examples)


def check(run: RunData) -> CheckResult:
    """Judge the end state of a run that has been healed and allowed to catch up."""
    res = CheckResult("completeness", True)
    log_end, bound = run.log_end(), _final_bound(run)
    res.counts["records"] = run.topic.height
    behind = {p: (bound.get(p, 0), end) for p, end in log_end.items() if bound.get(p, 0) != end}
    for p, (b, end) in sorted(behind.items()):
        res.add(
            Anomaly(
                "not-caught-up",
                "bindings",
                str(p),
                run.uppers.get("data", 0) - 1,
                expected=end,
                found=b,
                detail=f"after the final phase partition {p} is sealed through offset {b} but "
                f"the topic ends at {end}: {end - b} records were never sealed",
            )
        )
    _acknowledged(run, res)
    if behind:
        return res  # the final state can only match the whole topic once caught up
    # Caught up, so every record is bound: each slot's last step winner is its latest record
    # (step winners are sorted by slot, then step).
    latest = (
        run.winners()
        .unique(subset=["kh", "np"], keep="last", maintain_order=True)
        .filter(pl.col("dvh").is_not_null())
        .select(pl.col("dkh").alias("kh"), pl.col("dvh").alias("vh"), "row")
    )
    # The change points are sorted by (kh, vh, ts): each pair's last row holds its final count.
    state = (
        run.change_points("data")
        .filter(pl.struct("kh", "vh").is_last_distinct())
        .select("kh", "vh", pl.col("mult").alias("diff"))
        .filter(pl.col("diff") != 0)
    )
    joined = (
        latest.with_columns(pl.lit(1, pl.Int64).alias("want"))
        .join(state, on=["kh", "vh"], how="full", coalesce=True)
        .with_columns(pl.col("want").fill_null(0), pl.col("diff").fill_null(0))
    )
    bad = joined.filter(pl.col("want") != pl.col("diff"))
    res.counts["final_keys"] = latest.height
    examples = []
    for r in bad.head(MAX_EXAMPLES).iter_rows(named=True):
        key, value = run.lookup("data", r["kh"], r["vh"])
        if r["row"] is not None:
            rec = run.topic.row(int(r["row"]), named=True)
            key, value = rec["key"], rec["value"]
        examples.append(
            Anomaly(
                "final-state-mismatch",
                "data",
                show(key),
                run.uppers.get("data", 0) - 1,
                expected=f"{show(value)!r} x{r['want']}",
                found=f"{show(value)!r} x{r['diff']}",
                detail="the final data differs from the whole topic replayed",
            )
        )
    res.add_bulk("final-state-mismatch", bad.height, examples)
    return res
