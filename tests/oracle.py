"""The slow, obviously-correct oracle: rebuild the model at every sealed step and compare.

Quadratic in steps times keys, so it is for tests and small runs; the fast checkers are tested
against it. Reads through the pipeline's persist layer, which also enforces diff 0/1 and
unique keys on every snapshot.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sealcheck.rundir.files import TopicRecord
from sealcheck_upsert_source.persist import InvariantViolation, Persist
from tests.model import expected_state


@dataclass
class ReferenceResult:
    """Steps checked and every mismatch found (empty when valid)."""

    steps: range
    problems: list[str] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        """No problems, and at least one sealed step was checked."""
        return not self.problems and len(self.steps) > 0


def _diff(name: str, t: int, got: dict[bytes, bytes], want: dict[bytes, bytes]) -> list[str]:
    out = []
    for key in sorted(set(got) | set(want)):
        if got.get(key) != want.get(key):
            out.append(
                f"{name} at step {t}, key {key!r}: persisted {got.get(key)!r}, "
                f"model {want.get(key)!r}"
            )
    return out


def check_every_step(store: Persist, topic: list[TopicRecord], limit: int = 20) -> ReferenceResult:
    """Compare ``data`` and ``errors`` with the model at every step in ``[since, upper)``."""
    uppers = store.uppers()
    upper = min(uppers.get("data", 0), uppers.get("errors", 0))
    since = max(store.sinces().values(), default=0)
    result = ReferenceResult(range(since, upper))
    if uppers.get("bindings", 0) < upper:
        result.problems.append(f"bindings sealed at {uppers.get('bindings', 0)} < data {upper}")
        return result
    for t in result.steps:
        try:
            bound = {int(k): int(v) for k, v in store.snapshot("bindings", t).items()}
            model = expected_state(topic, bound)
            result.problems += _diff("data", t, store.snapshot("data", t), model.data)
            result.problems += _diff("errors", t, store.snapshot("errors", t), model.errors)
        except InvariantViolation as exc:
            result.problems.append(str(exc))
        if len(result.problems) >= limit:
            break
    return result
