"""sealed_state: at every sealed step ``t``, ``data`` (and ``errors``) equal the model — the
topic replayed up to the offsets bound at ``t`` — compared change by change, step by step.

Both sides start empty, so equal states at every step is the same as equal changes at every
step. The changes are compared per step by multiset fingerprint
(:func:`sealcheck.checkers.frames.fingerprints`); only the steps whose fingerprints differ are
joined
update by update, to say what differs. Each record belongs to the step that first bound it
(:func:`sealcheck.checkers.replay.first_bound`), so a regression of the bindings shows here no
earlier
than the step where it happens.

An explanation shows, for the key and step, the model's value and the updates it expects,
beside the values the store actually holds (with their multiplicities) and the updates it
persisted — so a lost insert, a lost retraction and a wrong value read differently. Keys whose
acknowledged writes Kafka lost (see ``completeness``) are counted apart, not blamed.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from sealcheck.checkers.frames import consolidate, fingerprints, pair_hash, signed
from sealcheck.checkers.inputs import RunData
from sealcheck.checkers.replay import model_fingerprints, model_updates
from sealcheck.checkers.result import (
    MAX_EXAMPLES,
    NO_BINDINGS,
    NOTHING_SEALED,
    Anomaly,
    CheckResult,
    show,
)


def _record_value(run: RunData, collection: str, row: int) -> str | None:
    value = run.effect_value(collection, row)
    return None if value is None else show(value)


def _model_value(run: RunData, name: str, kh: int, ts: int) -> str | None:
    """The model's value of a key after step ``ts`` (None: absent)."""
    last = (
        run.model_changes(name)
        .filter((pl.col("ukh") == kh) & (pl.col("step") <= ts))
        .sort("step")
        .tail(1)
    )
    if last.height == 0 or last["new"][0] is None:
        return None
    return _record_value(run, name, int(last["row"][0]))


def _reading(expected: str | None, held: list[dict[str, Any]]) -> str:
    """One sentence saying what kind of difference this is."""
    values = [h["value"] for h in held]
    extra = [v for v in values if v != expected]
    if expected is not None and not values:
        return f"the store lost the insert of {expected!r}: the key is absent"
    if expected is None and values:
        return f"{extra!r} should have been retracted by now (a lost retraction)"
    if expected in values and extra:
        return f"{extra!r} was not retracted when {expected!r} was inserted (a lost retraction)"
    if expected in values:
        many = [h["multiplicity"] for h in held if h["value"] == expected]
        return f"the store holds the right value with multiplicity {many[0]}, not 1"
    if expected is None:
        return "both are empty here, but the updates of this step differ"
    return f"the store holds {extra!r} where the model holds {expected!r} (a wrong value)"


def _explain(
    run: RunData, name: str, bad: pl.DataFrame, emitted: pl.DataFrame, kh: int, ts: int
) -> Anomaly:
    at = bad.filter((pl.col("kh") == kh) & (pl.col("ts") == ts))
    updates: list[dict[str, Any]] = []
    records: list[dict[str, int]] = []
    first_row: int | None = None
    for r in emitted.filter((pl.col("kh") == kh) & (pl.col("ts") == ts)).iter_rows(named=True):
        rec = run.topic_row(int(r["row"]))
        first_row = int(r["row"]) if first_row is None else first_row
        records.append({"partition": rec["partition"], "offset": rec["offset"]})
        updates.append({"value": _record_value(run, name, int(r["row"])), "diff": r["diff"]})
    persisted = [
        {"value": show(run.lookup(name, kh, r["vh"])[1]), "diff": r["diff_found"]}
        for r in at.filter(pl.col("diff_found") != 0).iter_rows(named=True)
    ]
    want = _model_value(run, name, kh, ts)
    held = run.live_values(name, kh, ts)
    key = run.lookup(name, kh)[0]
    if key is None and first_row is not None:  # nothing persisted under this key: the input's
        key = run.effect_key(name, first_row)
    return Anomaly(
        "state-mismatch",
        name,
        show(key),
        ts,
        expected={"value": want, "updates": updates},
        found={"values": held, "updates": persisted},
        detail=f"after step {ts}: {_reading(want, held)}. The model's updates here come from "
        f"input records {records or '(none bound at this step)'}",
        context=run.context_for_step(ts),
    )


def _at(horizon: int) -> pl.Expr:
    """``ts`` advanced to ``horizon``: the steps up to it are judged as one."""
    return pl.max_horizontal(pl.col("ts"), pl.lit(horizon)).alias("ts")


def _mismatched_steps(run: RunData, name: str, upper: int, horizon: int) -> list[int]:
    model = model_fingerprints(run.model_changes(name), upper)
    found = fingerprints(
        run.change_points(name).filter(pl.col("ts") < upper).with_columns(_at(horizon)),
        signed(pair_hash("kh", "vh")),
    )
    both = model.join(found, on="ts", how="full", coalesce=True, suffix="_found")
    differ = both.filter(pl.col("fp").ne_missing(pl.col("fp_found")))
    return sorted(differ["ts"].to_list())


def _changed_steps(run: RunData, res: CheckResult) -> None:
    """A step captured right after it was sealed that the store holds otherwise at the end."""
    examples: list[Anomaly] = []
    for name, t in run.steps.changed[:MAX_EXAMPLES]:
        since = run.steps_since(name)
        merged = since > 0 and t == since
        what = f"steps 0-{t} merged into step {t} by compaction" if merged else f"step {t}"
        examples.append(
            Anomaly(
                "sealed-step-changed",
                name,
                None,
                t,
                detail=f"{name}: {what} as the harness captured right after sealing differs "
                "from what the store holds at the end: a sealed step changed after it was "
                "sealed (lost, rewritten or compacted wrongly)",
                context=run.context_for_step(t),
            )
        )
    res.add_bulk("sealed-step-changed", len(run.steps.changed), examples)


def _unjudged(run: RunData, res: CheckResult) -> None:
    """VALID never covers less than every sealed step: name the steps judged only merged."""
    parts = [f"{c} steps 0-{s}" for c, s in sorted(run.sinces.items()) if s > 0]
    missed = [
        f"{c} {a}-{b - 1}" for c, rs in sorted(run.steps.missed.items()) for a, b in rs if b > a
    ]
    short = [
        f"{c} {res.counts.get(f'{c}_steps_judged', 0)}/{n}"
        for c, n in sorted(run.steps.sealed.items())
        if c in ("data", "errors") and res.counts.get(f"{c}_steps_judged", 0) < n
    ]
    if not parts and not short:
        return
    if res.valid:
        res.valid = None
    why = (
        f"{', '.join(parts)} were merged by compaction before the harness captured them"
        + (f" (compacted before they could be captured: {', '.join(missed)})" if missed else "")
        if parts
        else "sealed steps are missing from the store's export"
    )
    res.error = (
        f"not every sealed step was judged one by one ({'; '.join(short) or 'see counts'} "
        f"judged/sealed): {why}; a wrong step among them would be invisible"
    )


def check(run: RunData) -> CheckResult:
    """Compare the model's updates with the persisted ones at every sealed step."""
    if not run.keeps_bindings:
        return CheckResult.not_applicable("sealed_state", NO_BINDINGS)
    res = CheckResult("sealed_state", True)
    sealed = min(run.uppers.get("data", 0), run.uppers.get("bindings", 0))
    if sealed == 0:  # the system should have sealed steps: nothing judged is not a pass
        return CheckResult("sealed_state", None, error=NOTHING_SEALED)
    # Each collection is compacted in its own transaction, so a crash can leave them at
    # different ``since``s. Steps are told apart only above all of them: both sides are
    # compared with everything up to the highest ``since`` merged into it (the model's
    # winners are merged there; fingerprints are linear, so the store's updates merge too).
    since = max(run.sinces.values(), default=0)
    run.winners("data")
    res.counts["records_bound"] = run.bound_records
    explained = 0
    for name in ("data", "errors"):
        upper = min(run.uppers.get(name, 0), sealed)
        # Steps up to ``since`` survive only merged into it (compacted before the harness
        # captured them: sealcheck.checkers.steps): they are judged as one step, never one by one.
        res.counts[f"{name}_steps_sealed"] = run.steps.sealed.get(name, upper)
        res.counts[f"{name}_steps_judged"] = max(0, upper - since - 1) if since else upper
        res.counts[f"{name}_steps_captured"] = run.steps.captured.get(name, 0)
        steps = _mismatched_steps(run, name, upper, since)
        res.counts[f"{name}_persisted_updates"] = run.change_points(name).height
        res.counts[f"{name}_steps_differing"] = len(steps)
        if not steps:
            continue
        # Explain the differing steps update by update.
        in_steps = pl.col("ts").is_in(pl.Series(steps).implode())
        changes = run.model_changes(name)
        emitted = model_updates(changes.filter(pl.col("step").is_in(steps)))
        model = consolidate(emitted.filter(in_steps), since)
        found = consolidate(
            run.change_points(name)
            .filter(pl.col("ts") < upper)
            .with_columns(_at(since))
            .filter(in_steps)
            .select("kh", "vh", "ts", "diff"),
            since,
        )
        joined = model.join(
            found, on=["kh", "vh", "ts"], how="full", coalesce=True, suffix="_found"
        ).with_columns(pl.col("diff").fill_null(0), pl.col("diff_found").fill_null(0))
        bad = joined.filter(pl.col("diff") != pl.col("diff_found"))
        places = bad.select("kh", "ts").unique().sort("ts", "kh")
        kafka = places.filter(run.kafka_explains(name))
        explained += kafka.height
        places = places.join(kafka, on=["kh", "ts"], how="anti").sort("ts", "kh")
        if bad.height == 0:  # never silently valid: say that the two comparisons disagree
            res.valid = None if res.valid else res.valid
            res.error = (
                f"{name}: the fingerprints of steps {steps[:5]} differ but no update differs "
                "row by row (a 64-bit hash collision, or a checker bug): not judged"
            )
            continue
        examples = [
            _explain(run, name, bad, emitted, r["kh"], r["ts"])
            for r in places.head(MAX_EXAMPLES).iter_rows(named=True)
        ]
        res.add_bulk("state-mismatch", places.height, examples)
    _changed_steps(run, res)
    _unjudged(run, res)
    if explained:
        res.counts["differences_explained_by_kafka"] = explained
        if res.valid:
            res.valid = None
            res.error = (
                f"{explained} differences are on keys whose acknowledged writes Kafka lost "
                "(see completeness: kafka-lost-write); they are not blamed on the system under test"
            )
    return res
