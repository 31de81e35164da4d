"""as_of: the store read *as of* a sample of sealed steps equals the model there.

Every other checker judges the updates a system exported (for Delta, its change data feed).
Where the export also offers snapshots — the collections read as of the last version of some
steps, through a second path that does not trust the change feed (``export/asof.parquet``:
``collection, ts, key, value``) — this checker compares each snapshot with the model's state
after that step (the topic replayed up to the offsets bound there), by multiset fingerprint
first and key by key where they differ. A change feed that disagrees with the table it
describes shows here and nowhere else. Without snapshots (the pipeline offers none) the
checker is *not applicable*; snapshots offered of which none could be judged make it unknown.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from sealcheck.checkers.frames import h, pair_hash
from sealcheck.checkers.inputs import RunData
from sealcheck.checkers.replay import model_fingerprints
from sealcheck.checkers.result import MAX_EXAMPLES, Anomaly, CheckResult, show


def _model_state(run: RunData, name: str, ts: int) -> pl.DataFrame:
    """The model's live ``(kh, vh)`` after step ``ts``."""
    return (
        run.model_changes(name)
        .filter(pl.col("step") <= ts)
        .sort("step")
        .group_by("ukh")
        .agg(pl.col("new").last())
        .filter(pl.col("new").is_not_null())
        .select(pl.col("ukh").alias("kh"), pl.col("new").alias("vh"))
    )


def _explain(run: RunData, name: str, snap: pl.DataFrame, ts: int) -> list[Anomaly]:
    model = _model_state(run, name, ts)
    held = snap.select("key", "value", h("key").alias("kh"), h("value").alias("vh"))
    both = model.join(held, on="kh", how="full", coalesce=True, suffix="_held")
    bad = both.filter(pl.col("vh").ne_missing(pl.col("vh_held"))).sort("kh").head(MAX_EXAMPLES)
    out = []
    for r in bad.iter_rows(named=True):
        key = r["key"] if r["key"] is not None else run.lookup(name, r["kh"])[0]
        want = None
        if r["vh"] is not None:
            want = show(run.lookup(name, r["kh"], r["vh"])[1])
        found = show(r["value"])
        if want is None:
            reading = "the table holds a key the model does not hold here"
        elif found is None:
            reading = "the table lacks a key the model holds here"
        else:
            reading = "the table holds another value than the model"
        out.append(
            Anomaly(
                "asof-mismatch",
                name,
                show(key),
                ts,
                expected=want,
                found=found,
                detail=f"read as of the last version of step {ts}: {reading}",
                context=run.context_for_step(ts),
            )
        )
    return out


def check(run: RunData) -> CheckResult:
    """Compare every snapshot the export offers with the model at its step."""
    if run.asof is None:
        return CheckResult.not_applicable(
            "as_of",
            "the export offers no snapshots as of a step (no export/asof.parquet)",
            {"snapshots_judged": 0},
        )
    res = CheckResult("as_of", True)
    res.counts["snapshots_judged"] = 0
    snaps = run.asof.lazy().collect()
    sealed = run.uppers.get("bindings", 0)
    run.winners()
    skipped = 0
    for (name, ts), snap in sorted(snaps.group_by(["collection", "ts"]), key=lambda g: g[0]):
        name, ts = str(name), int(ts)
        if name not in ("data", "errors") or ts >= min(run.uppers.get(name, 0), sealed):
            skipped += 1
            continue
        if ts < run.sinces.get(name, 0):
            skipped += 1
            continue
        model = model_fingerprints(run.model_changes(name), ts + 1)["fp"].sum()
        found = snap.select(pair_hash(h("key"), h("value")).alias("fp"))["fp"].sum()
        res.counts["snapshots_judged"] += 1
        if int(model or 0) == int(found or 0):
            continue
        examples: list[Any] = _explain(run, name, snap, ts)
        if not examples:
            res.valid = None if res.valid else res.valid
            res.error = f"{name} as of step {ts}: fingerprints differ but no key does"
            continue
        res.add_bulk("asof-mismatch", len(examples), examples)
    res.counts["snapshots_skipped"] = skipped
    if res.counts["snapshots_judged"] == 0 and res.valid:
        res.valid = None
        res.error = (
            f"the export offers snapshots, but none of them could be judged ({skipped} "
            "skipped: not sealed, or below the collection's since)"
        )
    return res
