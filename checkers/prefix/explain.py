"""Why no prefix explains a state (:mod:`.prefix`): a smallest set of keys that no cut
satisfies together, each with the cuts that would explain it, told in offsets.

For each key of the partition, the cuts that explain its shown value are a union of intervals
(one per record whose effect equals it, plus "before its first record" for absent). Only the
cuts at or after the previous state's are allowed. The search tries single keys (no allowed cut
explains it: a value no record wrote, or one the previous state had already moved past), then
pairs (two keys whose cuts are disjoint), then a greedy intersection that empties, shrunk by
deleting every key that is not needed (pairwise compatible keys can still conflict together).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from typing import TYPE_CHECKING

import numpy as np

from sealcheck.checkers.prefix.index import ABSENT, MANY

if TYPE_CHECKING:
    from sealcheck.checkers.prefix.index import Table

Span = tuple[int, int]
#: pairs are searched exhaustively among at most this many constrained keys
_PAIRS_UPTO = 300


@dataclass(frozen=True)
class Partition:
    """One partition of the input: its number, how many records, their offsets in order."""

    number: int
    records: int
    offsets: np.ndarray

    def offset(self, position: int) -> int:
        """The offset of the record at ``position`` (0-based) of the partition."""
        return int(self.offsets[position])


@dataclass(frozen=True)
class KeyStory:
    """One key of a conflict: what the state shows and which cuts would explain it."""

    kh: int
    partition: int
    #: an input record of the key (its row in the topic dump), to show its bytes
    row: int
    #: the shown value's id (:data:`~.index.ABSENT`, :data:`~.index.MANY`)
    shows: int
    #: every cut (inclusive ranges of records applied) at which the key holds that value
    spans: tuple[Span, ...]


@dataclass(frozen=True)
class Conflict:
    """A state of ``partition`` that no cut at or after ``since`` explains, and why."""

    state: int
    partition: int
    since: int
    keys: tuple[KeyStory, ...]


def spans_of(
    t: Table, p: int, shown: np.ndarray, since: int | None = None
) -> dict[int, list[Span]]:
    """Per key id of partition ``p``: the cuts at which it holds what ``shown`` says. With
    ``since``, only the keys that some cut in ``[since, end]`` does not explain (the others
    constrain nothing there)."""
    s, e = t.bounds[p]
    n = e - s
    order = t.by_key[(t.by_key >= s) & (t.by_key < e)]
    kid = t.kid[order]
    q = order - s
    first = np.r_[True, kid[1:] != kid[:-1]]
    last = np.r_[kid[1:] != kid[:-1], True]
    nxt = np.where(last, n, np.r_[q[1:], n])
    lo = np.concatenate([np.zeros(first.sum(), dtype=np.int64), q + 1])
    hi = np.concatenate([q[first], nxt])
    who = np.concatenate([kid[first], kid])
    value = np.concatenate([np.full(first.sum(), ABSENT, dtype=np.int64), t.val[order]])
    keep = (value == shown[who]) & (lo <= hi)
    tied = np.unique(kid)
    if since is not None:
        free = np.unique(who[keep & (lo <= since) & (hi >= n)])
        tied = np.setdiff1d(tied, free, assume_unique=True)
        keep &= ~np.isin(who, free)
    out: dict[int, list[Span]] = {int(k): [] for k in tied}
    for k, a, b in sorted(
        zip(who[keep].tolist(), lo[keep].tolist(), hi[keep].tolist(), strict=True)
    ):
        out[k].append((a, b))
    return out


def _clip(spans: list[Span], since: int, n: int) -> list[Span]:
    return [(max(a, since), b) for a, b in spans if b >= since and a <= n]


def _meet(a: list[Span], b: list[Span]) -> list[Span]:
    """The intersection of two sorted unions of inclusive ranges."""
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if lo <= hi:
            out.append((lo, hi))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def feasible(sets: list[list[Span]], since: int, n: int) -> bool:
    """Whether some cut in ``[since, n]`` lies in every one of ``sets``."""
    common: list[Span] = [(since, n)]
    for spans in sets:
        common = _meet(common, spans)
        if not common:
            return False
    return True


def smallest(spans: dict[int, list[Span]], since: int, n: int) -> list[int]:
    """A smallest set of keys (by the search in the module's docstring) with no common cut
    in ``[since, n]``; empty if all keys have one."""
    allowed = {k: _clip(v, since, n) for k, v in spans.items()}
    singles = [k for k, v in allowed.items() if not v]
    if singles:
        return [singles[0]]
    tied = {k: v for k, v in allowed.items() if v != [(since, n)]}
    if not tied:
        return []
    low = max(tied, key=lambda k: tied[k][0][0])
    high = min(tied, key=lambda k: tied[k][-1][1])
    if tied[low][0][0] > tied[high][-1][1]:
        return sorted([high, low])
    if len(tied) <= _PAIRS_UPTO:
        for a, b in combinations(sorted(tied), 2):
            if not _meet(tied[a], tied[b]):
                return [a, b]
    chosen: list[int] = []
    common: list[Span] = [(since, n)]
    for k in sorted(tied, key=lambda k: (tied[k][-1][1] - tied[k][0][0], k)):
        chosen.append(k)
        common = _meet(common, tied[k])
        if not common:
            break
    if common:
        return []
    for k in list(chosen):
        rest = [c for c in chosen if c != k]
        if not feasible([tied[c] for c in rest], since, n):
            chosen = rest
    return sorted(chosen)


def _row_of(t: Table, p: int, kid: int) -> int:
    s, e = t.bounds[p]
    mine = np.flatnonzero(t.kid[s:e] == kid)
    return int(t.row[s + mine[-1]]) if len(mine) else -1


def story(t: Table, p: int, kid: int, shown: np.ndarray, spans: list[Span]) -> KeyStory:
    """One key's story in partition ``p``: what it shows and every cut that explains it
    (``spans``: its entry of :func:`spans_of`)."""
    return KeyStory(int(t.keys[kid]), p, _row_of(t, p, kid), int(shown[kid]), tuple(spans))


def conflict(t: Table, p: int, since: int, shown: np.ndarray, state: int) -> Conflict:
    """Why no cut of partition ``p`` at or after ``since`` explains ``shown``."""
    s, e = t.bounds[p]
    spans = spans_of(t, p, shown, since)
    keys = smallest(spans, since, e - s)
    stories = tuple(story(t, p, k, shown, spans[k]) for k in keys)
    return Conflict(state, p, since, stories)


def tell(k: KeyStory, name: str, part: Partition, since: int) -> str:
    """One key's part of an explanation, in offsets."""
    if k.shows == MANY:
        return f"{name} shows several values at once"
    if not k.spans:
        return f"{name} shows a value no record of it wrote"
    later = [sp for sp in k.spans if sp[1] >= since]
    lo, hi = later[0] if later else k.spans[-1]
    if k.shows == ABSENT:
        what = (
            f"{name} is absent, as before its first record (offset {part.offset(hi):,})"
            if lo == 0
            else f"{name} is absent, as after the delete at offset {part.offset(lo - 1):,}"
        )
    else:
        what = f"{name} shows the value written at offset {part.offset(lo - 1):,}"
    if hi < part.records and not (k.shows == ABSENT and lo == 0):
        what += f", overwritten at offset {part.offset(hi):,}"
    if not later and since > 0:
        what += f" (the previous state had already applied offset {part.offset(since - 1):,})"
    return what


def explain(c: Conflict, names: list[str], part: Partition) -> str:
    """The whole explanation of a conflict, one sentence."""
    told = "; ".join(tell(k, n, part, c.since) for k, n in zip(c.keys, names, strict=True))
    which = {1: "it", 2: "both"}.get(len(c.keys), "them all")
    where = f"no prefix of partition {c.partition}"
    if c.since > 0:
        where += f" reaching at least offset {part.offset(c.since - 1):,} (as the previous state)"
    return f"{told}: {where} explains {which}"
