"""Your own records: what a descriptor says its topic carries.

Sealcheck decides, per record and from the run's seed, *which key* (a number in the run's key
space, drawn from its distribution: uniform, Zipf), *which kind* (an upsert, a tombstone, a
deliberately bad record — by the workload's ratios), the writer and the record's number in that
writer's stream; it hands these to the descriptor as a :class:`Draw`, with a random source of
the draw's own (derived from the seed, apart from the one that draws keys and kinds). The
descriptor's ``record(draw)`` (:meth:`sealcheck.systems.api.SystemUnderTest.record`) returns
the :class:`NewRecord` to produce: its key and value bytes in the job's own format (Avro, its
own JSON, ...), its headers, optionally its partition.

Values must be a function of the draw alone — its ``rng``, key, number and writer; no clock, no
``uuid4`` — so that the same seed gives the same records, and ``--replay``, ``shrink`` and the
reproduce line rebuild them. Successive writes of a key should differ (a replay of equal values
is invisible to every checker): put ``draw.number`` or ``draw.writer`` somewhere in the value.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from sealcheck.core.said import named

#: the kinds of record Sealcheck draws (by the workload's ``tombstone_ratio`` and
#: ``bad_ratio``): what the descriptor's record looks like for each is its own
KINDS = ("upsert", "tombstone", "bad")


@dataclass(frozen=True)
class Draw:
    """What Sealcheck decided for one record, for a descriptor's ``record(draw)``.

    ``key``: the key's number in the key space (0 .. ``workload.keys`` - 1), drawn from the
    workload's distribution — format it as the job's keys look (``f"order-{draw.key}"``);
    ``kind``: ``upsert``, ``tombstone`` (what a delete looks like for the job: by default a
    record without a value) or ``bad`` (a record the job must send to its dead letters, e.g. a
    value that fails its schema); ``number``: the record's number in its writer's stream (0,
    1, ...); ``writer``: the writer (``w0``, ``w1``, ...); ``rng``: the writer's own random
    source for values, seeded from the run's seed — use it, and nothing else that is random."""

    key: int
    kind: str
    number: int
    writer: str
    rng: random.Random


@dataclass(frozen=True)
class NewRecord:
    """One record to produce: ``key`` and ``value`` bytes (None: a null key, or a tombstone's
    missing value), Kafka ``headers`` as (name, bytes) pairs, and the ``partition`` (None:
    the producer's, by the key's hash; records of one key must stay in one partition)."""

    key: bytes | None
    value: bytes | None
    headers: Sequence[tuple[str, bytes]] = ()
    partition: int | None = None


class RecordError(ValueError):
    """What a descriptor's ``record(draw)`` returned is not a :class:`NewRecord` of bytes: the
    message says what it was and what to return instead."""


def checked_record(result: object) -> NewRecord:
    """``result`` when it is a :class:`NewRecord` with bytes (or None) for its key and value,
    (str, bytes) headers and a partition that is None or a whole number from 0; else a
    :class:`RecordError` naming the part that is wrong."""
    if not isinstance(result, NewRecord):
        raise RecordError(
            f"{named(result)} is not a record: return sealcheck.NewRecord(key=..., value=...) "
            "with bytes (or None) for each"
        )
    for part in ("key", "value"):
        got = getattr(result, part)
        if got is not None and not isinstance(got, bytes):
            raise RecordError(
                f"its {part} is {named(got)}: a record's {part} is bytes or None (encode text "
                f"with .encode(), Avro with fastavro)"
            )
    for header in result.headers:
        if (
            not isinstance(header, tuple)
            or len(header) != 2
            or not isinstance(header[0], str)
            or not isinstance(header[1], bytes)
        ):
            raise RecordError(f"its header {named(header)} is not a (str, bytes) pair")
    partition = result.partition
    if partition is not None and (
        not isinstance(partition, int) or isinstance(partition, bool) or partition < 0
    ):
        raise RecordError(f"its partition is {named(partition)}: give None or a number from 0")
    return result
