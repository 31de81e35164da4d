"""Seeded upsert workloads: which keys, which values, how many tombstones and bad records."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass


@dataclass(frozen=True)
class UpsertMix:
    """Shape of an upsert workload (ratios are per record, from one seeded RNG)."""

    keys: int = 1_000
    tombstone_ratio: float = 0.1
    #: records with a null key or an undecodable value (each half of this ratio)
    bad_ratio: float = 0.02
    value_size: int = 16

    def __post_init__(self) -> None:
        if self.keys < 1:
            raise ValueError(f"keys={self.keys!r} must be at least 1")
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


def upsert_records(
    rng: random.Random, count: int, mix: UpsertMix
) -> list[tuple[bytes | None, bytes | None]]:
    """``count`` (key, value) pairs: UTF-8 keys ``k<n>``, JSON values, tombstones, bad records.

    Bad records are a null key or a value that is not JSON, half and half.
    """
    pad = "x" * max(0, mix.value_size - 12)
    out: list[tuple[bytes | None, bytes | None]] = []
    for i in range(count):
        key: bytes | None = f"k{rng.randrange(mix.keys)}".encode()
        roll = rng.random()
        value: bytes | None
        if roll < mix.tombstone_ratio:
            value = None
        elif roll < mix.tombstone_ratio + mix.bad_ratio / 2:
            value = b"{not json " + str(i).encode()
        elif roll < mix.tombstone_ratio + mix.bad_ratio:
            key, value = None, json.dumps({"i": i}).encode()
        else:
            value = json.dumps({"i": i, "p": pad}).encode()
        out.append((key, value))
    return out
