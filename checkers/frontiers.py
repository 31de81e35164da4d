"""frontiers: the design's rules on how the collections are sealed relative to each other.

* at rest, ``upper(data) == upper(errors)``: the two are appended in one transaction, so a
  store where they differ was written by something else (and half of it cannot be judged);
* always, ``upper(data) <= upper(bindings) <= upper(data) + 1``: bindings are sealed first and
  at most one step ahead, so a restart always knows the offsets behind its data.

The second rule is checked in the stored uppers and in every sample the observer took while
the run went on (without samples it is judged at rest only, and the result is unknown).
"""

from __future__ import annotations

from typing import Any

from sealcheck.checkers.inputs import RunData
from sealcheck.checkers.result import NO_BINDINGS, Anomaly, CheckResult


def _order(uppers: dict[str, Any], where: str, context: dict[str, Any]) -> list[Anomaly]:
    ub, ud = int(uppers.get("bindings", 0)), int(uppers.get("data", 0))
    out = []
    if ub < ud:
        out.append(
            Anomaly(
                "bindings-behind-data",
                "bindings",
                step=ub,
                expected=f"upper(bindings) >= upper(data) = {ud}",
                found=ub,
                detail=f"{where}: data is sealed at steps whose offsets were never bound, so a "
                "restart cannot know where to resume",
                context=context,
            )
        )
    if ub > ud + 1:
        out.append(
            Anomaly(
                "bindings-too-far-ahead",
                "bindings",
                step=ud,
                expected=f"upper(bindings) <= upper(data) + 1 = {ud + 1}",
                found=ub,
                detail=f"{where}: bindings are appended one step before data, never more",
                context=context,
            )
        )
    return out


def check(run: RunData) -> CheckResult:
    """Check the frontier rules at rest and in every observed sample."""
    if not run.keeps_bindings:
        return CheckResult.not_applicable("frontiers", NO_BINDINGS)
    res = CheckResult("frontiers", True)
    up = run.uppers
    for coll in ("bindings", "data", "errors"):
        res.counts[f"upper_{coll}"] = up.get(coll, 0)
    if up.get("data", 0) != up.get("errors", 0):
        lower = min(up.get("data", 0), up.get("errors", 0))
        res.add(
            Anomaly(
                "errors-upper-differs",
                "errors",
                step=lower,
                expected=f"upper(errors) == upper(data) = {up.get('data', 0)}",
                found=up.get("errors", 0),
                detail="data and errors are sealed together in one transaction, but the store "
                f"seals them at {up.get('data', 0)} and {up.get('errors', 0)}: steps from "
                f"{lower} on are sealed in one and not the other",
            )
        )
    for a in _order(up, "in the stored uppers", {}):
        res.add(a)
    samples = 0
    for op in run.history.observations():
        samples += 1
        where = f"observed at history index {op.get('index')}"
        context = {"observed": {k: op.get(k) for k in ("index", "time", "value")}}
        for a in _order(op["value"], where, context):
            res.add(a)
    res.counts["observations"] = samples
    if samples == 0 and res.valid:
        res.valid = None
        res.error = "the history has no observed uppers: the frontier order was judged at rest only"
    return res
