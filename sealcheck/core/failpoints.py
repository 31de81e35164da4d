"""A system under test's failpoints as nemeses plan with them: every name, and which are
passed only at start-up, only once the system has run a while, right after a durable write,
and right before one — one catalogue, taken from the descriptor once
(:meth:`FailpointCatalogue.of`), not six fields copied one by one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class FailpointCatalogue:
    """The failpoints of a system under test."""

    #: every failpoint, by name
    names: tuple[str, ...] = ()
    #: passed only while an incarnation starts (rehydration): armed at a start
    startup: frozenset[str] = frozenset()
    #: passed only once the system has run a while (e.g. compaction, which starts a few steps
    #: in): planned after the others in each cover
    late: frozenset[str] = frozenset()
    #: right after a durable write returned: an ``error`` there is a write that happened but
    #: reported failure (an indeterminate storage operation)
    commit: tuple[str, ...] = ()
    #: right before a write, where an incarnation that stalls holds a decision made from state
    #: that may go stale (the zombie writer); None: the system has none
    stall: str | None = None

    @classmethod
    def of(cls, system: Any) -> FailpointCatalogue:
        """A descriptor's (``failpoints``, ``startup_failpoints``, ``late_failpoints``,
        ``commit_failpoints``, ``stall_failpoint``)."""
        return cls(
            names=tuple(system.failpoints),
            startup=frozenset(system.startup_failpoints),
            late=frozenset(system.late_failpoints),
            commit=tuple(system.commit_failpoints),
            stall=system.stall_failpoint,
        )
