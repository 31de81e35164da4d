"""A job's crash windows as seen from outside: no failpoint in the job, only what it writes.

A :class:`CrashWindow` opens when the job shows it has begun something — a new file in a
directory it writes (a checkpoint's ``offsets/N``, a Delta table's ``_delta_log`` commit) or a
line of its log — and closes when it shows it has finished (``commits/N``). The ``window``
nemesis (:mod:`sealcheck.nemeses.window`) kills the job a planned delay after a planned
occurrence of the opening, and then records whether the closing had happened: evidence that the
kill landed inside the window, or not.

A system declares its windows by name (:attr:`sealcheck.systems.api.SystemUnderTest.windows`),
with paths relative to its directory (a job's :attr:`sealcheck.systems.job.JobRun.dir`);
:func:`streaming_windows` gives the windows every Structured Streaming job has.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class CrashWindow:
    """Where a crash hurts, told by what the job writes.

    ``opens``: a regular expression matched in full against the name of a new file in the
    directory ``opens_in`` (relative to the job's directory) — or, with ``opens_in`` None,
    searched in each new line of the job's log. Its first group, if any, is ``{n}`` in
    ``closes``. ``closes``: the same, for the file (in ``closes_in``) or log line that closes
    the window; None: the window has no observable end (a kill is then always inside it)."""

    opens: str
    opens_in: str | None = None
    closes: str | None = None
    closes_in: str | None = None
    #: what is under way in the window, for people
    what: str = ""

    def __post_init__(self) -> None:
        for pattern in (self.opens, self.closes):
            if pattern is not None:
                re.compile(pattern.replace("{n}", "0"))  # a bad pattern fails where it is written

    def closing(self, n: str | None) -> re.Pattern[str] | None:
        """The closing pattern for the opening whose first group was ``n``."""
        if self.closes is None:
            return None
        return re.compile(self.closes.replace("{n}", re.escape(n) if n is not None else r"\d+"))


def streaming_windows(
    checkpoint: str = "checkpoint", delta_tables: Sequence[str] = ()
) -> Mapping[str, CrashWindow]:
    """The crash windows of a Structured Streaming query with its checkpoint at
    ``checkpoint`` (relative to the job's directory), for every micro-batch N:

    * ``after-offsets``: ``offsets/N`` is written (the batch is planned) and ``commits/N`` is
      not yet: the batch is read and its sink written in here, and a restart replays it;
    * ``after-commit:<table>``, for each Delta table in ``delta_tables``: a new commit of the
      table's ``_delta_log`` and no new ``commits/N`` yet — the sink committed and the query
      has not recorded it (the window in which Paimon's and Hudi's Spark sinks once committed
      a replayed batch twice). It is milliseconds wide: a kill from outside lands in it only
      sometimes, and the evidence says when.
    """
    offsets, commits = f"{checkpoint}/offsets", f"{checkpoint}/commits"
    out = {
        "after-offsets": CrashWindow(
            r"(\d+)", offsets, r"{n}", commits, "batch N planned, before commits/N"
        )
    }
    for table in delta_tables:
        name = table.rstrip("/").rsplit("/", 1)[-1]
        out[f"after-commit:{name}"] = CrashWindow(
            r"(\d+)\.json",
            f"{table}/_delta_log",
            r"\d+",
            commits,
            f"{name} committed, before the batch's commits/N",
        )
    return out
