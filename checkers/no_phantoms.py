"""no_phantoms: every value ever inserted into ``data`` (and every error inserted into
``errors``) is one that some input record puts under that key — by the built-in record encoding
or by the system's own mapping (:meth:`sealcheck.checkers.inputs.RunData.effects`).

A value that is missing from the topic but was acknowledged to the producers is Kafka's loss
(see ``completeness``), not the pipeline's invention: it is counted apart, not blamed."""

from __future__ import annotations

import numpy as np
import orjson
import polars as pl

from sealcheck.checkers.frames import pair_hash
from sealcheck.checkers.inputs import RunData
from sealcheck.checkers.replay import packed
from sealcheck.checkers.result import MAX_EXAMPLES, NOTHING_SEALED, Anomaly, CheckResult, show


def _written(run: RunData, name: str) -> pl.Series:
    """The ``(key, value)`` pairs (hashed) the records put into collection ``name``."""
    ups = run.effects(name).filter(pl.col("vh").is_not_null())
    return ups.select(pair_hash("kh", "vh")).to_series().implode()


def _unwritten(run: RunData, name: str) -> tuple[pl.DataFrame, int, int]:
    """The inserts into ``name`` that no record wrote, without those Kafka's lost writes may
    explain; how many were inserted and how many were explained."""
    inserted = run.change_points(name).filter(pl.col("diff") > 0)
    unwritten = inserted.filter(~pair_hash("kh", "vh").is_in(_written(run, name)))
    if run.stated is None and name == "data":  # the raw pair of an acknowledged write
        acked = run.acked()  # read whatever is unwritten: the acknowledgements are an input
        phantoms = unwritten
        if unwritten.height:  # (hashing 10M acknowledged pairs only when it can matter)
            pairs = acked.select(pair_hash("kh", "vh")).to_series().implode()
            phantoms = unwritten.filter(~pair_hash("kh", "vh").is_in(pairs))
    elif run.stated is None:  # an error cites the position of the record it is about
        lost = set(run.kafka_lost().filter(~pl.col("present"))["pos"].to_list())
        gone = [
            _cites(run.update_row(int(r))["value"]) in lost if lost else False
            for r in unwritten["row"]
        ]
        phantoms = unwritten.filter(~pl.Series(gone, dtype=pl.Boolean))
    else:
        phantoms = unwritten.filter(~run.kafka_explains(name))
    return phantoms, inserted.height, unwritten.height - phantoms.height


def _cites(value: bytes | None) -> int | None:
    """The packed ``(partition, offset)`` a built-in error value names (None: none)."""
    try:
        doc = orjson.loads(value or b"")
        where = np.array([int(doc["partition"])]), np.array([int(doc["offset"])])
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        return None
    return int(packed(*where)[0])


#: per collection: the anomaly's kind, what was expected, and what it means — judged by the
#: built-in record encoding, or against the descriptor's own mapping (``effect``), where
#: either side may be wrong: the job, or the mapping that describes it
_WHAT = {
    "data": (
        "phantom-value",
        "a value written to this key",
        "this value was never written to this key: the system invented it",
        "no record's effect (the descriptor's effect()) puts this value under this key: the "
        "job wrote a row its effect does not describe (a bug in the job, or an effect() that "
        "misdescribes it)",
    ),
    "errors": (
        "phantom-error",
        "an error of a record with this key",
        "no input record puts this error under this key: the system invented it",
        "no record's effect (the descriptor's effect()) puts this dead letter under this key: "
        "the job wrote a dead letter its effect does not describe (a bug in the job, or an "
        "effect() that misdescribes it)",
    ),
}


def check(run: RunData) -> CheckResult:
    """Look every inserted ``(key, value)`` of ``data`` and ``errors`` up among the pairs the
    input records put there (by hash)."""
    if not (run.uppers.get("data", 0) or run.uppers.get("errors", 0)):
        return CheckResult("no_phantoms", None, error=NOTHING_SEALED)
    res = CheckResult("no_phantoms", True)
    explained = 0
    for name, counted in (("data", "inserted"), ("errors", "errors_inserted")):
        phantoms, inserted, kafka = _unwritten(run, name)
        res.counts[counted] = inserted
        explained += kafka
        kind, expected, builtin, stated = _WHAT[name]
        detail = builtin if run.stated is None else stated
        res.add_bulk(
            kind,
            phantoms.height,
            [
                Anomaly(
                    kind,
                    name,
                    show(u["key"]),
                    r["ts"],
                    expected=expected,
                    found=show(u["value"]),
                    detail=detail,
                    context=run.context_for_step(r["ts"]),
                )
                for r in phantoms.head(MAX_EXAMPLES).iter_rows(named=True)
                for u in [run.update_row(int(r["row"]))]
            ],
        )
    if explained:
        res.counts["explained_by_kafka"] = explained
        if res.valid:
            res.valid = None
            res.error = (
                f"{explained} persisted values or errors are missing from the topic only "
                "because Kafka lost acknowledged writes (see completeness)"
            )
    return res
