"""bindings: per partition the bound offsets never go down and never pass the log end, and
``bindings`` is sealed at least as far as ``data`` (and, bindings-first, at most one step
further)."""

from __future__ import annotations

import polars as pl

from checkers.inputs import RunData
from checkers.replay import binding_ranges
from checkers.result import MAX_EXAMPLES, Anomaly, CheckResult


def check(run: RunData) -> CheckResult:
    """Check the bindings' frontier and every bound offset."""
    res = CheckResult("bindings", True)
    ub, ud = run.uppers.get("bindings", 0), run.uppers.get("data", 0)
    res.counts["upper_bindings"], res.counts["upper_data"] = ub, ud
    if ub < ud:
        res.add(
            Anomaly(
                "bindings-behind-data",
                "bindings",
                step=ub,
                expected=f"upper >= {ud}",
                found=ub,
                detail="data is sealed at steps whose offsets were never bound: a restart "
                "cannot know where to resume",
            )
        )
    if ub > ud + 1:
        res.add(
            Anomaly(
                "bindings-too-far-ahead",
                "bindings",
                step=ud,
                expected=f"upper <= {ud + 1}",
                found=ub,
                detail="bindings are appended one step before data, never more",
            )
        )
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
                context=run.history.context_for_step(r["ts"]),
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
                context=run.history.context_for_step(r["ts"]),
            )
            for r in past.head(MAX_EXAMPLES).iter_rows(named=True)
        ],
    )
    return res
