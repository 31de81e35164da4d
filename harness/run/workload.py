"""Seeded upsert workloads: which keys, which values, how many tombstones and bad records."""

from __future__ import annotations

import bisect
import itertools
import json
import random
from collections.abc import Iterator
from dataclasses import dataclass

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


def records(
    rng: random.Random, mix: UpsertMix, tag: str = ""
) -> Iterator[tuple[bytes | None, bytes | None]]:
    """An endless seeded stream of (key, value) pairs: UTF-8 keys ``k<n>`` drawn from the
    mix's distribution, JSON values padded to ``value_size`` (``{"i": n, "p": "xx…"}``, with
    ``"w": tag`` when a tag is given), tombstones, and bad records — a null key, a value that
    is not JSON, or a value that is not UTF-8, a third each."""
    pad = "x" * max(0, mix.value_size - 12 - (len(tag) + 8 if tag else 0))
    cum: list[float] | None = None
    if mix.distribution == "zipf":
        cum = list(itertools.accumulate(1.0 / (i + 1) ** mix.zipf_s for i in range(mix.keys)))
    third = mix.bad_ratio / 3
    for i in itertools.count():
        if cum is None:
            n = rng.randrange(mix.keys)
        else:
            n = min(bisect.bisect(cum, rng.random() * cum[-1]), mix.keys - 1)
        key: bytes | None = f"k{n}".encode()
        roll = rng.random()
        value: bytes | None
        body: dict[str, object] = {"w": tag, "i": i} if tag else {"i": i}
        if roll < mix.tombstone_ratio:
            value = None
        elif roll < mix.tombstone_ratio + third:
            key, value = None, json.dumps(body).encode()
        elif roll < mix.tombstone_ratio + 2 * third:
            value = b"{not json " + str(i).encode()
        elif roll < mix.tombstone_ratio + mix.bad_ratio:
            value = b"\xff\xfe" + str(i).encode()
        else:
            value = json.dumps({**body, "p": pad}).encode()
        yield key, value


def upsert_records(
    rng: random.Random, count: int, mix: UpsertMix
) -> list[tuple[bytes | None, bytes | None]]:
    """The first ``count`` pairs of :func:`records`."""
    return list(itertools.islice(records(rng, mix), count))
