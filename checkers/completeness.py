"""completeness (after the final catch-up): the final bindings reach the log end, every
acknowledged write is in the topic (else a *Kafka* anomaly: the pipeline is not blamed), and
the final ``data`` equals the model of the whole topic.

It is valid only when it judged every acknowledged write the harness counted: with a history
that is missing or cut short it says how many it checked and stays unknown; a run that wrote
nothing (no record, no acknowledged write) is unknown too. Each anomaly carries its context: the
acknowledged write's time (``acked_ns``) and the last fault, start and exit before it, or, for
the final state, before the last step was sealed."""

from __future__ import annotations

from typing import Any

import polars as pl

from sealcheck.checkers.frames import pair_hash, run_ends, signed
from sealcheck.checkers.inputs import RunData
from sealcheck.checkers.kafka_lost import locate, positions
from sealcheck.checkers.replay import binding_ranges, latest
from sealcheck.checkers.result import MAX_EXAMPLES, Anomaly, CheckResult, show


def _final_bound(run: RunData) -> dict[int, int]:
    upper = run.uppers.get("data", 0)
    ranges = binding_ranges(run.collection("bindings"), upper).sort("partition", "ts")
    last = ranges.group_by("partition").agg(pl.col("end").last())
    return {int(p): int(e) for p, e in last.iter_rows()}


def _ack_context(run: RunData, acked_ns: Any) -> dict[str, Any]:
    """When a write was acknowledged and the last fault, start and exit before that."""
    if not isinstance(acked_ns, int):
        return {}
    return {"acked_ns": acked_ns, **run.history.context_at(acked_ns)}


def _acked_at(run: RunData, partition: int, offset: int) -> int | None:
    """When the write at ``(partition, offset)`` was acknowledged (None: it was not)."""
    found = run.history.collect(
        run.history.acked.lazy()
        .filter((pl.col("partition") == partition) & (pl.col("offset") == offset))
        .select("time")
        .head(1)
    )
    return int(found["time"][0]) if found.height else None


def _acknowledged(run: RunData, res: CheckResult) -> None:
    res.counts["acknowledged_writes_checked"] = run.acked().height
    written = run.history.written_acks()
    if written is not None:
        res.counts["acknowledged_writes_written"] = written
    mismatch = run.kafka_lost()
    lost, changed = mismatch.filter(~pl.col("present")), mismatch.filter(pl.col("present"))
    pos = positions(run.classified()) if mismatch.height else None
    for kind, frame, what in (
        ("kafka-lost-write", lost, "acknowledged (acks=all) but absent from the topic"),
        ("kafka-changed-write", changed, "acknowledged, but the topic holds another record there"),
    ):
        examples = []
        head = frame.head(MAX_EXAMPLES)
        acks = run.ack_rows(head["ack"].to_list())
        rows = locate(pos, head["pos"].to_numpy()).tolist() if pos is not None else []
        for r, row in zip(head.iter_rows(named=True), rows, strict=True):
            ack = acks[int(r["ack"])]
            there = run.topic_row(row) if row >= 0 else None
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
                    detail=f"a Kafka anomaly, not the system's: the write was {what}",
                    context=_ack_context(run, ack.get("time")),
                )
            )
        res.add_bulk(kind, frame.height, examples)


def _final_state(run: RunData, res: CheckResult) -> None:
    """The final ``data`` equals the latest good record of every key (compared by fingerprint
    first; joined row by row only when the fingerprints differ). Keys whose acknowledged
    writes Kafka lost are counted apart: the pipeline is not blamed for them."""
    latest_good = (
        latest(run.winners("data"))
        .filter(pl.col("dvh").is_not_null())
        .select(pl.col("slot").alias("kh"), "dvh", "row")
    )
    res.counts["final_keys"] = latest_good.height
    cp = run.change_points("data")
    want = latest_good.select(pair_hash("kh", "dvh").sum()).item()
    have = cp.select(signed(pair_hash("kh", "vh")).sum()).item()
    if want == have:
        return
    wanted = latest_good.select("kh", pl.col("dvh").alias("vh"), "row")
    # The change points are sorted by (kh, vh, ts): each pair's last row holds its final count.
    state = (
        cp.filter(run_ends("kh", "vh"))
        .select("kh", "vh", pl.col("mult").alias("diff"))
        .filter(pl.col("diff") != 0)
    )
    joined = (
        wanted.with_columns(pl.lit(1, pl.Int64).alias("want"))
        .join(state, on=["kh", "vh"], how="full", coalesce=True)
        .with_columns(pl.col("want").fill_null(0), pl.col("diff").fill_null(0))
    )
    differ = joined.filter(pl.col("want") != pl.col("diff"))
    kafka = run.kafka_explains("data")
    bad = differ.filter(~kafka)
    if differ.height > bad.height:
        res.counts["final_differences_explained_by_kafka"] = differ.height - bad.height
    examples = []
    last = run.uppers.get("data", 0) - 1
    for r in bad.head(MAX_EXAMPLES).iter_rows(named=True):
        key, value = run.lookup("data", r["kh"], r["vh"])
        context = run.context_for_step(last)
        if r["row"] is not None:  # the key's winning record: its key and value in data
            rec = run.topic_row(int(r["row"]))
            key = run.effect_key("data", int(r["row"]))
            value = run.effect_value("data", int(r["row"]))
            acked = _acked_at(run, int(rec["partition"]), int(rec["offset"]))
            if acked is not None:  # the key's latest record: when it was acknowledged
                context["latest_write_acked_ns"] = acked
        examples.append(
            Anomaly(
                "final-state-mismatch",
                "data",
                show(key),
                last,
                expected=f"{show(value)!r} x{r['want']}",
                found=f"{show(value)!r} x{r['diff']}",
                detail="the final data differs from the whole topic replayed",
                context=context,
            )
        )
    res.add_bulk("final-state-mismatch", bad.height, examples)


def check(run: RunData) -> CheckResult:
    """Judge the end state of a run that has been healed and allowed to catch up."""
    res = CheckResult("completeness", True)
    if not run.keeps_bindings:
        return _without_bindings(run, res)
    log_end, bound = run.log_end(), _final_bound(run)
    res.counts["records"] = run.classified().height
    # A bound past the log end is the bindings checker's ``bound-past-log-end``, not this.
    behind = {p: (bound.get(p, 0), end) for p, end in log_end.items() if bound.get(p, 0) < end}
    last = run.uppers.get("data", 0) - 1
    for p, (b, end) in sorted(behind.items()):
        res.add(
            Anomaly(
                "not-caught-up",
                "bindings",
                str(p),
                last,
                expected=end,
                found=b,
                detail=f"after the final phase partition {p} is sealed through offset {b} but "
                f"the topic ends at {end}: {end - b} records were never sealed",
                context=run.context_for_step(last),
            )
        )
    _acknowledged(run, res)
    if res.counts["records"] == 0 and res.counts["acknowledged_writes_checked"] == 0:
        if res.valid:  # the run should have written: an empty topic judges nothing
            res.valid = None
            res.error = "nothing was written (no record in the topic, no acknowledged write)"
        return res
    if behind:
        return _incomplete(run, res)  # the final state matches the whole topic once caught up
    ahead = sorted(p for p, b in bound.items() if b > log_end.get(p, 0))
    if ahead:
        if res.valid:
            res.valid = None
            res.error = (
                f"partitions {ahead} are bound past the dumped topic's end (see the bindings "
                "checker): the final state cannot be compared with the topic"
            )
        return res
    # Caught up, so every record is bound: each slot's last winner is its latest record.
    _final_state(run, res)
    return _incomplete(run, res)


def _without_bindings(run: RunData, res: CheckResult) -> CheckResult:
    """An output that keeps no bindings: every acknowledged write must be in the topic; the
    final state is ``prefix``'s to judge (the whole input's once the output settled), and
    without a settled output it is not judged at all (unknown)."""
    res.counts["records"] = run.classified().height
    _acknowledged(run, res)
    if res.counts["records"] == 0 and res.counts["acknowledged_writes_checked"] == 0:
        if res.valid:
            res.valid = None
            res.error = "nothing was written (no record in the topic, no acknowledged write)"
        return res
    if res.valid and not run.history.caught_up():
        res.valid = None
        res.error = (
            "the output keeps no bindings and the harness did not see it settle after healing: "
            "its final state was not judged as the whole input's"
        )
        return res
    return _incomplete(run, res)


def _incomplete(run: RunData, res: CheckResult) -> CheckResult:
    """Unknown (unless already invalid) when not every acknowledged write could be checked,
    or when differences were set aside as Kafka's."""
    problems = run.history.problems()
    explained = res.counts.get("final_differences_explained_by_kafka", 0)
    if res.valid is not True:
        return res
    if problems:
        checked = res.counts["acknowledged_writes_checked"]
        res.valid = None
        res.error = f"checked {checked:,} acknowledged writes, but {problems[0]}"
    elif explained:
        res.valid = None
        res.error = (
            f"{explained} final differences are on keys whose acknowledged writes Kafka lost "
            "(see kafka-lost-write): not blamed on the system under test, not judged"
        )
    return res
