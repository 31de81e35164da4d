"""seal_monotonic: observed uppers never go backwards, across pipeline restarts too."""

from __future__ import annotations

from sealcheck.checkers.inputs import RunData
from sealcheck.checkers.result import Anomaly, CheckResult


def check(run: RunData) -> CheckResult:
    """Walk the observed uppers in history order, per collection, keeping the maximum."""
    res = CheckResult("seal_monotonic", True)
    seen: dict[str, tuple[int, int]] = {}  # collection -> (max upper, index seen)
    observations = 0
    for op in run.history.ops:
        if op.get("f") != "uppers" or not isinstance(op.get("value"), dict):
            continue
        observations += 1
        for coll, upper in op["value"].items():
            best = seen.get(coll)
            if best is not None and int(upper) < best[0]:
                res.add(
                    Anomaly(
                        "seal-went-back",
                        coll,
                        step=int(upper),
                        expected=f">= {best[0]} (seen at history index {best[1]})",
                        found=int(upper),
                        detail=f"{coll} was sealed at {best[0]} and later observed at {upper}: "
                        "something sealed was unsealed",
                        context=run.context_for_step(int(upper)),
                    )
                )
            elif best is None or int(upper) > best[0]:
                seen[coll] = (int(upper), int(op.get("index", -1)))
    res.counts["observations"] = observations
    for coll, (highest, index) in sorted(seen.items()):
        final = run.uppers.get(coll, 0)
        if final < highest:
            res.add(
                Anomaly(
                    "seal-went-back",
                    coll,
                    step=final,
                    expected=f">= {highest} (seen at history index {index})",
                    found=final,
                    detail=f"the stored {coll} upper {final} is below one observed during the run",
                )
            )
    if observations == 0 and res.valid:
        res.valid = None
        res.error = "the history has no observed uppers, so monotonicity cannot be judged"
    return res
