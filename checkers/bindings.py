"""bindings: per partition the bound offsets never go down and never pass the log end (how
the collections' uppers must relate is the ``frontiers`` checker's)."""

from __future__ import annotations

import polars as pl

from sealcheck.checkers.inputs import RunData
from sealcheck.checkers.replay import POS_BITS, binding_ranges
from sealcheck.checkers.result import (
    MAX_EXAMPLES,
    NO_BINDINGS,
    NOTHING_SEALED,
    Anomaly,
    CheckResult,
)


def check(run: RunData) -> CheckResult:
    """Check every bound offset."""
    if not run.keeps_bindings:
        return CheckResult.not_applicable("bindings", NO_BINDINGS)
    ub = run.uppers.get("bindings", 0)
    if ub == 0:  # no binding sealed: nothing judged is not a pass
        return CheckResult("bindings", None, error=NOTHING_SEALED)
    res = CheckResult("bindings", True)
    ranges = binding_ranges(run.collection("bindings"), ub)
    res.counts["moves"] = ranges.height
    back = ranges.filter(pl.col("end") < pl.col("start"))
    res.add_bulk(
        "offset-went-back",
        back.height,
        [
            Anomaly(
                "offset-went-back",
                "bindings",
                str(r["partition"]),
                r["ts"],
                expected=f">= {r['start']}",
                found=r["end"],
                detail=f"partition {r['partition']} bound back from {r['start']} to {r['end']}",
                context=run.context_for_step(r["ts"]),
            )
            for r in back.head(MAX_EXAMPLES).iter_rows(named=True)
        ],
    )
    ends = pl.DataFrame(
        list(run.log_end().items()),
        schema={"partition": pl.Int64, "log_end": pl.Int64},
        orient="row",
    )
    past = ranges.join(ends, on="partition", how="left").filter(
        pl.col("end") > pl.col("log_end").fill_null(0)
    )
    # Kafka lost the tail of a partition (acknowledged writes beyond the dumped end): bounds
    # up to those writes were real when the pipeline read them; not the pipeline's fault.
    lost = run.kafka_lost().filter(~pl.col("present"))
    lost_end = lost.select(
        (pl.col("pos") // (1 << POS_BITS)).alias("partition"),
        (pl.col("pos") % (1 << POS_BITS) + 1).alias("lost_end"),
    )
    lost_end = lost_end.group_by("partition").agg(pl.col("lost_end").max())
    past = past.join(lost_end, on="partition", how="left")
    explained = past.filter(pl.col("end") <= pl.col("lost_end").fill_null(-1))
    past = past.join(explained.select("partition", "ts"), on=["partition", "ts"], how="anti")
    if explained.height:
        res.counts["bounds_explained_by_kafka"] = explained.height
        if res.valid:
            res.valid = None
            res.error = (
                f"{explained.height} bounds pass the dumped topic's end only where Kafka lost "
                "acknowledged writes (see completeness: kafka-lost-write)"
            )
    res.add_bulk(
        "bound-past-log-end",
        past.height,
        [
            Anomaly(
                "bound-past-log-end",
                "bindings",
                str(r["partition"]),
                r["ts"],
                expected=f"<= {r['log_end'] or 0}",
                found=r["end"],
                detail=f"partition {r['partition']} bound to offset {r['end']}, beyond the "
                f"topic's end {r['log_end'] or 0}: these records do not exist",
                context=run.context_for_step(r["ts"]),
            )
            for r in past.head(MAX_EXAMPLES).iter_rows(named=True)
        ],
    )
    return res
