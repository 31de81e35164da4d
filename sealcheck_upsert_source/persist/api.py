"""The persist contract every backend passes (see ``tests/unit/test_persist_contract.py``).

A *collection* holds updates ``(key, value, ts, diff)``. Its **upper** seals it: every
``ts < upper`` is final and nothing is ever written below it again. Its **since** is the
compaction frontier: reads ``as_of >= since`` are exact; history below may be merged.
A reader in another process that needs older times apart (the harness capturing every sealed
step) keeps a **read hold**: a row ``holds(reader, since)`` saying it can take any since up to
that one; a writer configured to honour holds compacts no further (up to its own bound).
Appends are compare-and-append: they name the upper they expect, so a writer whose view is
stale (a zombie) is refused with :class:`UpperMismatch` instead of corrupting the collection.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple, Protocol


class Update(NamedTuple):
    """One differential update: ``diff`` copies of ``(key, value)`` at time ``ts``.

    Ordered as the tuple ``(key, value, ts, diff)``. A named tuple rather than a dataclass: a
    step at 1M keys builds ~190,000 of them, and a frozen dataclass costs twice as much to
    build (issue 28).
    """

    key: bytes
    value: bytes
    ts: int
    diff: int


@dataclass(frozen=True)
class Batch:
    """Updates for one collection, sealing it from ``expected_upper`` to ``new_upper``."""

    updates: Sequence[Update]
    expected_upper: int
    new_upper: int


class PersistError(RuntimeError):
    """Base of every error the persist layer raises on purpose."""


class UpperMismatch(PersistError):
    """compare-and-append refused: the collection's upper is not the one the writer expected.

    This is the fence against zombie writers: a process that sees it must stop writing.
    """

    def __init__(self, collection: str, expected: int, actual: int) -> None:
        super().__init__(
            f"collection {collection!r}: expected upper {expected} but it is {actual}; "
            "another writer has appended since this one last looked (this writer is fenced)"
        )
        self.collection, self.expected, self.actual = collection, expected, actual


class StoreUnavailable(PersistError):
    """A write's outcome is unknown: the store stopped answering (a dead server, a lost reply)
    before it confirmed or refused. The write may or may not have happened."""


class InvariantViolation(PersistError):
    """A consolidated read found a diff other than 0/1, or a key with two values."""

    def __init__(self, collection: str, key: bytes, ts: int, detail: str) -> None:
        super().__init__(f"collection {collection!r}, key {key!r}, as of ts {ts}: {detail}")
        self.collection, self.key, self.ts, self.detail = collection, key, ts, detail


class ReadBelowSince(PersistError):
    """A read asked for a time below the compaction frontier."""


class ReadNotSealed(PersistError):
    """A read asked for a time that is not sealed yet (``as_of >= upper``)."""


def consolidate(collection: str, updates: Iterable[Update], as_of: int) -> dict[bytes, bytes]:
    """Sum diffs per ``(key, value)`` over ``updates`` with ``ts <= as_of``; check invariants.

    Returns key → value. Raises :class:`InvariantViolation` on a multiplicity other than 0/1
    or on a key holding two values.
    """
    sums: dict[tuple[bytes, bytes], int] = defaultdict(int)
    for u in updates:
        if u.ts <= as_of:
            sums[(u.key, u.value)] += u.diff
    return check_consolidated(collection, ((k, v, d) for (k, v), d in sums.items()), as_of)


def merged(rows: Iterable[tuple[bytes, bytes, int]]) -> list[tuple[bytes, bytes, int]]:
    """``(key, value, diff)`` rows summed per ``(key, value)``, zeros dropped: what a
    compaction writes back for the rows it deleted (no invariant is checked here, so a
    violation stays in the store for a read to report)."""
    sums: dict[tuple[bytes, bytes], int] = {}
    for k, v, d in rows:
        sums[(bytes(k), bytes(v))] = sums.get((bytes(k), bytes(v)), 0) + int(d)
    return [(k, v, d) for (k, v), d in sums.items() if d != 0]


def check_consolidated(
    collection: str, rows: Iterable[tuple[bytes, bytes, int]], as_of: int
) -> dict[bytes, bytes]:
    """Turn consolidated ``(key, value, multiplicity)`` rows into key → value, checking both
    invariants (zero multiplicities are skipped)."""
    state: dict[bytes, bytes] = {}
    for key, value, mult in rows:
        if mult == 0:
            continue
        if mult != 1:
            raise InvariantViolation(
                collection, key, as_of, f"value {value!r} has multiplicity {mult}, not 0 or 1"
            )
        if key in state:
            raise InvariantViolation(
                collection, key, as_of, f"two values {state[key]!r} and {value!r}"
            )
        state[key] = value
    return state


def check_batch(collection: str, batch: Batch) -> None:
    """Reject a malformed batch before touching storage (bad frontier or a ts outside it)."""
    if batch.new_upper <= batch.expected_upper:
        raise ValueError(
            f"collection {collection!r}: new upper {batch.new_upper} must exceed "
            f"expected upper {batch.expected_upper}"
        )
    for u in batch.updates:
        if not batch.expected_upper <= u.ts < batch.new_upper:
            raise ValueError(
                f"collection {collection!r}: update at ts {u.ts} is outside "
                f"[{batch.expected_upper}, {batch.new_upper})"
            )


class Persist(Protocol):
    """A store of named collections (SQLite now, PostgreSQL later)."""

    def compare_and_append(
        self, collection: str, updates: Sequence[Update], expected_upper: int, new_upper: int
    ) -> None:
        """Atomically append ``updates`` and move the upper, iff the upper is ``expected_upper``."""

    def compare_and_append_many(self, batches: Mapping[str, Batch]) -> None:
        """Like :meth:`compare_and_append` for several collections in one transaction."""

    def snapshot(self, collection: str, as_of: int) -> dict[bytes, bytes]:
        """The consolidated contents at ``as_of`` (``since <= as_of < upper``) as key → value."""

    def updates(self, collection: str, lo: int, hi: int) -> list[Update]:
        """Raw updates with ``lo <= ts < hi``, ordered by ``(ts, key, value)``."""

    def compact(self, collection: str, since: int) -> bool:
        """Advance ``since`` (merging history below it); False if it was already there.

        Reads at or after ``since`` are unchanged; reads below it are refused. Below ``since``
        the store keeps each key's consolidated ``(key, value, diff)`` once: a key with an
        update since the last compaction has its updates below ``since`` merged into one per
        value at ``since - 1``; a key without one keeps the update an earlier compaction left,
        untouched. So a compaction rewrites what changed since the last one, not the whole
        state; finding those keys' merged rows still scans one index entry per live key, but
        reads and writes no other row (issue 28). Readers of the raw updates must treat every
        time below ``since`` as ``since``.
        """

    def uppers(self) -> dict[str, int]:
        """Every collection's upper (a collection never appended to has upper 0)."""

    def holds(self) -> dict[str, int]:
        """Every reader's read hold: reader → the highest since it can take now (the store
        only keeps them: readers write their row themselves, and a hold only moves forward)."""

    def sinces(self) -> dict[str, int]:
        """Every collection's compaction frontier."""

    def close(self) -> None:
        """Release the connection."""
