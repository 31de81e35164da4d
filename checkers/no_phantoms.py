"""no_phantoms: every value ever inserted into ``data`` was written to that key in the topic,
and every error names a real record with that raw key.

A value that is missing from the topic but was acknowledged to the producers is Kafka's loss
(see ``completeness``), not the pipeline's invention: it is counted apart, not blamed."""

from __future__ import annotations

import polars as pl

from sealcheck.checkers.frames import pair_hash
from sealcheck.checkers.inputs import RunData
from sealcheck.checkers.replay import packed, slot_bytes
from sealcheck.checkers.result import MAX_EXAMPLES, NOTHING_SEALED, Anomaly, CheckResult, show


def check(run: RunData) -> CheckResult:
    """Look every inserted ``(key, value)`` up among the topic's written pairs (by hash)."""
    if not (run.uppers.get("data", 0) or run.uppers.get("errors", 0)):
        return CheckResult("no_phantoms", None, error=NOTHING_SEALED)
    res = CheckResult("no_phantoms", True)
    inserted = run.change_points("data").filter(pl.col("diff") > 0)
    written = (
        run.classified()
        .filter(pl.col("rvh").is_not_null())
        .select(pair_hash("kh", "rvh"))
        .to_series()
        .implode()
    )
    unwritten = inserted.filter(~pair_hash("kh", "vh").is_in(written))
    acked = run.acked().select(pair_hash("kh", "vh")).to_series().implode()
    phantoms = unwritten.filter(~pair_hash("kh", "vh").is_in(acked))
    if unwritten.height > phantoms.height:
        res.counts["explained_by_kafka"] = unwritten.height - phantoms.height
    res.counts["inserted"] = inserted.height
    res.add_bulk(
        "phantom-value",
        phantoms.height,
        [
            Anomaly(
                "phantom-value",
                "data",
                show(u["key"]),
                r["ts"],
                expected="a value written to this key",
                found=show(u["value"]),
                detail="this value was never written to this key: the pipeline invented it",
                context=run.history.context_for_step(r["ts"]),
            )
            for r in phantoms.head(MAX_EXAMPLES).iter_rows(named=True)
            for u in [run.update_row(int(r["row"]))]
        ],
    )
    errors = run.collection("errors").filter(pl.col("diff") > 0)
    cited = errors.with_columns(
        pl.col("value")
        .cast(pl.String)
        .str.json_path_match("$.partition")
        .cast(pl.Int64, strict=False)
        .alias("partition"),
        pl.col("value")
        .cast(pl.String)
        .str.json_path_match("$.offset")
        .cast(pl.Int64, strict=False)
        .alias("offset"),
    )
    slots = (
        run.topic.lazy()
        .join(cited.lazy().select("partition", "offset").unique(), on=["partition", "offset"])
        .select("partition", "offset", slot_bytes().alias("key"))
        .collect(engine="streaming")
    )
    real = cited.join(slots, on=["partition", "offset", "key"], how="anti")
    res.counts["errors_inserted"] = errors.height
    lost = run.kafka_lost().filter(~pl.col("present"))["pos"]
    cites_lost = pl.Series(
        packed(real["partition"].fill_null(0).to_numpy(), real["offset"].fill_null(0).to_numpy())
    ).is_in(lost.implode())
    if cites_lost.any():
        res.counts["explained_by_kafka"] = res.counts.get("explained_by_kafka", 0) + int(
            cites_lost.sum()
        )
        real = real.filter(~cites_lost)
    res.add_bulk(
        "phantom-error",
        real.height,
        [
            Anomaly(
                "phantom-error",
                "errors",
                show(r["key"]),
                r["ts"],
                expected="an error citing a record with this raw key",
                found=show(r["value"]),
                detail="the error cites a record that does not exist or has another key",
                context=run.history.context_for_step(r["ts"]),
            )
            for r in real.head(MAX_EXAMPLES).iter_rows(named=True)
        ],
    )
    if res.valid and res.counts.get("explained_by_kafka"):
        res.valid = None
        res.error = (
            f"{res.counts['explained_by_kafka']} persisted values or errors are missing from the "
            "topic only because Kafka lost acknowledged writes (see completeness)"
        )
    return res
