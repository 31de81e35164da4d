"""The report's section on the versions of a system under test that declares them (issue 53):
which version each incarnation ran, when each version ran, and which steps (or states, for an
output without bindings) were first seen sealed while it ran — "which version wrote which
batches", read from the history alone (its ``version`` ops before each start, the supervisor's
starts, the observer's ``uppers``).

A step first seen sealed just after a handover may have been written by the version before:
the rows say "first seen sealed while it ran", never "written by".
"""

from __future__ import annotations

from dataclasses import dataclass

from sealcheck.rundir.history import History
from sealcheck.rundir.names import SUT_START

__all__ = ["VersionRow", "version_rows"]


@dataclass(frozen=True)
class VersionRow:
    """One version's stretch of the run: from its first incarnation's start to the next
    version's (or the history's end)."""

    version: str
    #: the incarnations that ran it, in order
    incarnations: tuple[int, ...]
    #: seconds on the history's clock
    from_s: float
    to_s: float
    #: the first and last step (or state) first seen sealed in that stretch; None: none was
    first: int | None
    last: int | None


def version_rows(history: History) -> list[VersionRow]:
    """One row per stretch of one version, in run order (a version that comes back after a
    rollback gets a row per stretch); empty for a system without versions."""
    ops, versions = history.ops, history.versions()
    if not versions:
        return []
    stretches: list[tuple[str, list[int], int]] = []  # version, incarnations, started (ns)
    end, upper, uppers = 0, 0, []  # the data upper over time, to find each stretch's steps
    for op in ops:
        t, value = int(op.get("time", 0)), op.get("value")
        end = max(end, t)
        if op.get("f") == "uppers" and isinstance(value, dict):
            upper = int(value.get("data", upper) or 0)
            uppers.append((t, upper))
        elif op.get("f") == SUT_START and isinstance(value, dict):
            n = value.get("incarnation")
            version = versions.get(n) if type(n) is int else None
            if version is None or type(n) is not int:
                continue
            if stretches and stretches[-1][0] == version:
                stretches[-1][1].append(n)
            else:
                stretches.append((version, [n], t))
    rows = []
    for i, (version, incarnations, start) in enumerate(stretches):
        stop = stretches[i + 1][2] if i + 1 < len(stretches) else end
        before = max((u for t, u in uppers if t <= start), default=0)
        after = max((u for t, u in uppers if t <= stop), default=0)
        first, last = (before, after - 1) if after > before else (None, None)
        rows.append(VersionRow(version, tuple(incarnations), start / 1e9, stop / 1e9, first, last))
    return rows
