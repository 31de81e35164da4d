"""Seeded upsert workloads: which keys, which values, how many tombstones and bad records."""

from __future__ import annotations

import bisect
import itertools
import json
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from sealcheck.core.records import Draw, NewRecord, checked_record
from sealcheck.harness.run.sample import Sample

#: Key distributions: every key equally likely, or Zipf (key ``k<i>`` with weight 1/(i+1)**s).
DISTRIBUTIONS = ("uniform", "zipf")
#: The topic a run's producers write (and its system under test reads).
TOPIC = "upserts"


@dataclass(frozen=True)
class UpsertMix:
    """Shape of an upsert workload (ratios are per record, from one seeded RNG)."""

    keys: int = 1_000
    tombstone_ratio: float = 0.1
    #: records with a null key or an undecodable value (each half of this ratio)
    bad_ratio: float = 0.02
    value_size: int = 16
    distribution: str = "uniform"
    zipf_s: float = 1.1

    def __post_init__(self) -> None:
        if self.keys < 1:
            raise ValueError(f"keys={self.keys!r} must be at least 1")
        if self.distribution not in DISTRIBUTIONS:
            raise ValueError(
                f"distribution={self.distribution!r}; use one of {', '.join(DISTRIBUTIONS)}"
            )
        if self.zipf_s <= 0:
            raise ValueError(f"zipf_s={self.zipf_s!r} must be positive")
        if not 0 <= self.value_size <= 1_000_000:
            raise ValueError(f"value_size={self.value_size!r} must be between 0 and 1000000")
        for name in ("tombstone_ratio", "bad_ratio"):
            ratio = getattr(self, name)
            if not 0.0 <= ratio <= 1.0:
                raise ValueError(f"{name}={ratio!r} must be between 0 and 1")
        if self.tombstone_ratio + self.bad_ratio > 1.0:
            raise ValueError(
                f"tombstone_ratio + bad_ratio = {self.tombstone_ratio + self.bad_ratio} exceeds 1"
            )


#: Good records only (no tombstones, no bad records) over 1,000 keys: the smoke round trip.
PLAIN = UpsertMix(keys=1_000, tombstone_ratio=0.0, bad_ratio=0.0)


#: The kinds of record a workload writes, as messages name them: an upsert, a tombstone, and
#: Sealcheck's own three bad records — or one ``bad`` kind of a descriptor's own records.
UPSERT, TOMBSTONE = "an upsert", "a tombstone"
NO_KEY, NOT_JSON = "a bad record: no key", "a bad record: its value is not JSON"
NOT_UTF8, BAD = "a bad record: its value is not UTF-8", "a bad record"
#: a kind of :data:`sealcheck.core.records.KINDS` -> its name here
NAMED = {"upsert": UPSERT, "tombstone": TOMBSTONE, "bad": BAD}

#: A descriptor's ``record(draw)``: the record to produce for what Sealcheck drew.
MakeRecord = Callable[[Draw], object]


def _draws(rng: random.Random, mix: UpsertMix) -> Iterator[tuple[int, int, float]]:
    """The draws of one writer's stream: (the record's number, its key's number, a roll in
    [0, 1) that decides its kind) — the only use of the writer's RNG, in this order."""
    cum: list[float] | None = None
    if mix.distribution == "zipf":
        cum = list(itertools.accumulate(1.0 / (i + 1) ** mix.zipf_s for i in range(mix.keys)))
    for i in itertools.count():
        if cum is None:
            n = rng.randrange(mix.keys)
        else:
            n = min(bisect.bisect(cum, rng.random() * cum[-1]), mix.keys - 1)
        yield i, n, rng.random()


def records(
    rng: random.Random, mix: UpsertMix, tag: str = ""
) -> Iterator[tuple[bytes | None, bytes | None]]:
    """An endless seeded stream of (key, value) pairs: UTF-8 keys ``k<n>`` drawn from the
    mix's distribution, JSON values padded to ``value_size`` (``{"i": n, "p": "xx…"}``, with
    ``"w": tag`` when a tag is given), tombstones, and bad records — a null key, a value that
    is not JSON, or a value that is not UTF-8, a third each."""
    for _, record in _own(rng, mix, tag):
        yield record.key, record.value


def _own(rng: random.Random, mix: UpsertMix, tag: str) -> Iterator[tuple[str, NewRecord]]:
    """Sealcheck's own records (:func:`records`), each with its kind."""
    pad = "x" * max(0, mix.value_size - 12 - (len(tag) + 8 if tag else 0))
    third = mix.bad_ratio / 3
    for i, n, roll in _draws(rng, mix):
        key: bytes | None = f"k{n}".encode()
        value: bytes | None
        body: dict[str, object] = {"w": tag, "i": i} if tag else {"i": i}
        if roll < mix.tombstone_ratio:
            kind, value = TOMBSTONE, None
        elif roll < mix.tombstone_ratio + third:
            kind, key, value = NO_KEY, None, json.dumps(body).encode()
        elif roll < mix.tombstone_ratio + 2 * third:
            kind, value = NOT_JSON, b"{not json " + str(i).encode()
        elif roll < mix.tombstone_ratio + mix.bad_ratio:
            kind, value = NOT_UTF8, b"\xff\xfe" + str(i).encode()
        else:
            kind, value = UPSERT, json.dumps({**body, "p": pad}).encode()
        yield kind, NewRecord(key, value)


def writer_records(
    seed: int,
    mix: UpsertMix,
    writer: str,
    make: MakeRecord | None = None,
    sample: Sample | None = None,
) -> Iterator[tuple[str, NewRecord]]:
    """One writer's endless stream, each record with its kind (:data:`UPSERT`, ...): Sealcheck's
    own records, or with ``make`` (a descriptor's ``record``) the descriptor's, for the same
    draws of keys and kinds (the writer's RNG, ``seed``) and values from a second RNG derived
    from ``seed`` alone. The same seed gives the same records; a ``make`` that returns what is
    not a record raises :class:`sealcheck.core.records.RecordError`. With a ``sample``, the
    sample's records instead (:meth:`Sample.replay`): a record without a key is a bad one,
    one without a value a tombstone."""
    if sample is not None:
        for record in sample.replay(seed, mix.keys):
            kind = BAD if record.key is None else TOMBSTONE if record.value is None else UPSERT
            yield kind, record
        return
    rng = random.Random(seed)
    if make is None:
        yield from _own(rng, mix, writer)
        return
    values = random.Random(f"sealcheck-values:{seed}")
    for i, n, roll in _draws(rng, mix):
        if roll < mix.tombstone_ratio:
            kind = "tombstone"
        elif roll < mix.tombstone_ratio + mix.bad_ratio:
            kind = "bad"
        else:
            kind = "upsert"
        yield NAMED[kind], checked_record(make(Draw(n, kind, i, writer, values)))


def upsert_records(
    rng: random.Random, count: int, mix: UpsertMix
) -> list[tuple[bytes | None, bytes | None]]:
    """The first ``count`` pairs of :func:`records`."""
    return list(itertools.islice(records(rng, mix), count))
