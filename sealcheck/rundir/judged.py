"""How ``results.json`` says what was judged, for every reader of it (the CLI, the report,
``serve``, the pytest plugin, the shrinker): the word of a checker that had nothing to judge,
and the order in which anomalies are read (the first wrong step first).

Imports nothing (the pytest plugin reads results through it without loading the checkers).
"""

from __future__ import annotations

from typing import Any

#: a checker's ``valid`` in ``results.json`` when the system under test offers nothing for it
#: to judge (e.g. ``as_of`` without snapshots): neither a pass nor a failure, and left out of
#: the run's verdict
NOT_APPLICABLE = "not applicable"


def is_not_applicable(checker: Any) -> bool:
    """Whether a checker's entry of ``results.json`` says it had nothing to judge."""
    return isinstance(checker, dict) and checker.get("valid") == NOT_APPLICABLE


def step_order(step: Any, checker: str) -> tuple[int, int, str]:
    """Sort key of an anomaly: by step, then checker; anomalies without a step come last."""
    if isinstance(step, int) and not isinstance(step, bool):
        return (0, step, checker)
    return (1, 0, checker)
