"""completeness (after the final catch-up): the final bindings equal the log end, every
acknowledged write is in the topic (else a *Kafka* anomaly: the pipeline is not blamed), and
the final ``data`` equals the model of the whole topic."""

from __future__ import annotations

import polars as pl

from checkers.frames import binding_ranges
from checkers.inputs import RunData
from checkers.result import MAX_EXAMPLES, Anomaly, CheckResult, show


def _final_bound(run: RunData) -> dict[int, int]:
    upper = run.uppers.get("data", 0)
    ranges = binding_ranges(run.collection("bindings"), upper).sort("partition", "ts")
    last = ranges.group_by("partition").agg(pl.col("end").last())
    return {int(p): int(e) for p, e in last.iter_rows()}


def _acknowledged(run: RunData, res: CheckResult) -> None:
    acked = run.history.acked
    res.counts["acknowledged_writes"] = acked.height
    joined = acked.join(
        run.topic.select(
            "partition",
            "offset",
            pl.col("key").alias("tk"),
            pl.col("value").alias("tv"),
            pl.lit(True).alias("present"),
        ),
        on=["partition", "offset"],
        how="left",
    )
    lost = joined.filter(pl.col("present").is_null())
    changed = joined.filter(
        pl.col("present").is_not_null()
        & (~pl.col("key").eq_missing(pl.col("tk")) | ~pl.col("value").eq_missing(pl.col("tv")))
    )
    for kind, frame, what in (
        ("kafka-lost-write", lost, "acknowledged (acks=all) but absent from the topic"),
        ("kafka-changed-write", changed, "acknowledged, but the topic holds another record there"),
    ):
        res.add_bulk(
            kind,
            frame.height,
            [
                Anomaly(
                    kind,
                    None,
                    show(r["key"]),
                    None,
                    expected={
                        "partition": r["partition"],
                        "offset": r["offset"],
                        "value": show(r["value"]),
                    },
                    found={"key": show(r["tk"]), "value": show(r["tv"])},
                    detail=f"a Kafka anomaly, not the pipeline's: the write was {what}",
                )
                for r in frame.head(MAX_EXAMPLES).iter_rows(named=True)
            ],
        )


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
    latest = (
        run.classified()
        .lazy()
        .sort("kh", "np", "offset", "partition", nulls_last=True)
        .unique(subset=["kh", "np"], keep="last")
        .filter(pl.col("dvh").is_not_null())
        .select(pl.col("dkh").alias("kh"), pl.col("dvh").alias("vh"), "row")
        .collect()
    )
    state = (
        run.sealed("data")
        .group_by("kh", "vh")
        .agg(pl.col("diff").sum())
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
