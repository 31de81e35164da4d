"""A descriptor's own methods tried on the run's own records before anything starts: its
``record(draw)`` on a sample of the run's draws (it raises, returns what is not a record, gives
another record for the same draw, or repeats its keys' values), its ``effect(record)`` on a
sample of the records the producers will write (it raises, returns what is not effects, or
changes nothing) — each failure one line (:class:`ConfigError`), rather than after the whole
run."""

from __future__ import annotations

import itertools
import json
import sys
import zlib
from collections.abc import Iterator, Sequence

from sealcheck.core.effects import (
    EffectError,
    EffectMapping,
    NotAnEffect,
    Record,
    checked_effects,
)
from sealcheck.core.records import RecordError
from sealcheck.core.said import named
from sealcheck.harness.run.config import ConfigError, TestConfig, WorkloadConfig
from sealcheck.harness.run.workload import (
    BAD,
    NO_KEY,
    NOT_JSON,
    NOT_UTF8,
    TOMBSTONE,
    UPSERT,
    MakeRecord,
    writer_records,
)
from sealcheck.systems.job_calls import raised

#: A descriptor's records warn when more than this fraction of upserts repeat their key's
#: previous value.
REPEATS_WARN = 0.05
#: A descriptor's records are made twice for this many draws of each writer: the same draw
#: must give the same record.
REPEATABLE = 200
#: The mapping of records to effects is tried on at least this many of the run's first
#: records, and on more until every kind of record the workload writes was among them ...
SAMPLE = 2_000
#: ... but never on more than this many.
SAMPLE_MAX = 20_000


def refuse_broken_effect(
    name: str,
    mapping: EffectMapping,
    spec: TestConfig,
    producer_seeds: Sequence[int],
    make: MakeRecord | None = None,
) -> None:
    """Refuse, in one clear line (:class:`ConfigError`), a ``mapping`` (called ``name``) that
    raises, or returns what is not effects (:func:`sealcheck.core.effects.checked_effects`),
    on one of the run's records (:func:`sample_records`) — rather than after the whole run."""
    tried, changing, returned = 0, False, set[str]()
    call = name if name.endswith(")") else f"{name}(record)"  # a call named whole as it is
    for record in sample_records(spec.workload, producer_seeds, spec.partitions, make):
        try:
            result = mapping(record)
        except Exception as exc:
            raise ConfigError(
                f"{call} raised {raised(exc)} for the record {describe(record)}: fix the "
                "descriptor's effect (it is tried on a sample of the run's records before the run "
                "starts)"
            ) from None
        try:
            effects = checked_effects(result)
        except EffectError as exc:  # the whole result no effect: say what to return instead
            why = exc.fix if isinstance(exc, NotAnEffect) and exc.value is result else str(exc)
            raise ConfigError(
                f"{call} returned {named(result)} for the record {describe(record)}: {why}"
            ) from None
        tried += 1
        changing = changing or bool(effects)
        if not effects:
            returned.add(named(result))
    if tried and not changing:  # not one record changes anything: nothing would be judged
        raise ConfigError(
            f"{call} changed nothing for any of the {tried:,} records tried (it returned "
            f"{' or '.join(sorted(returned))}): a mapping that skips every record says the output "
            "stays empty; did effect() forget to return its Upsert, Delete or DeadLetter?"
        )


def sample_records(
    workload: WorkloadConfig,
    producer_seeds: Sequence[int],
    partitions: int,
    make: MakeRecord | None = None,
) -> Iterator[Record]:
    """The run's first records as its producers will write them — each producer's own seeded
    stream (same seed, same records: Sealcheck's own, or with ``make`` the descriptor's), taken
    in turn — until :data:`SAMPLE` were given and every kind of record the workload writes was
    among them (at most :data:`SAMPLE_MAX`). Partitions and offsets are placeholders: a
    record's partition is its own when it names one, else its key's CRC-32 modulo
    ``partitions`` (librdkafka's default for a keyed record; partition 0 without a key), its
    offset the count of records given to that partition before."""
    for _, record in _first_records(workload, producer_seeds, partitions, make):
        yield record


def _first_records(
    workload: WorkloadConfig,
    producer_seeds: Sequence[int],
    partitions: int,
    make: MakeRecord | None,
) -> Iterator[tuple[str, Record]]:
    """:func:`sample_records`, each with its kind."""
    mix, sample = workload.mix(), workload.recorded()
    streams = [writer_records(s, mix, f"w{i}", make, sample) for i, s in enumerate(producer_seeds)]
    if sample is not None:  # the kinds the sample holds
        expected = {BAD if r.key is None else TOMBSTONE if r.value is None else UPSERT
                    for r in sample.records}  # fmt: skip
    else:
        bad = {BAD} if make is not None else {NO_KEY, NOT_JSON, NOT_UTF8}
        expected = {UPSERT} if mix.tombstone_ratio + mix.bad_ratio < 1 else set()
        expected |= {TOMBSTONE} if mix.tombstone_ratio > 0 else set()
        expected |= bad if mix.bad_ratio > 0 else set()
    seen: set[str] = set()
    offsets = [0] * partitions
    drawn = (pair for turn in zip(*streams, strict=True) for pair in turn)
    for n, (what, new) in enumerate(itertools.islice(drawn, SAMPLE_MAX)):
        if n >= SAMPLE and seen >= expected:
            return
        partition = new.partition
        if partition is None:
            partition = zlib.crc32(new.key) % partitions if new.key is not None else 0
        if partition >= partitions:
            raise RecordError(
                f"its partition is {partition}: the run's topic has {partitions} (0 to "
                f"{partitions - 1}; --partitions sets how many)"
            )
        record = Record(partition, offsets[partition], new.key, new.value, tuple(new.headers))
        offsets[partition] += 1
        seen.add(what)
        yield what, record


def refuse_broken_records(
    name: str, make: MakeRecord, spec: TestConfig, producer_seeds: Sequence[int]
) -> None:
    """Refuse, in one clear line (:class:`ConfigError`), a descriptor's ``record(draw)``
    (called ``name``) that raises or returns what is not a record, on a sample of the run's
    draws; warn (on stderr) when upserts often repeat their key's previous value — a replay of
    equal values is invisible to every checker."""
    last: dict[bytes | None, bytes | None] = {}
    upserts = repeats = 0
    try:
        for what, record in _first_records(spec.workload, producer_seeds, spec.partitions, make):
            if what == UPSERT:
                upserts += 1
                repeats += record.key in last and last[record.key] == record.value
                last[record.key] = record.value
    except RecordError as exc:
        raise ConfigError(f"{name}(draw) returned a record that is not one: {exc}") from None
    except Exception as exc:
        raise ConfigError(
            f"{name}(draw) raised {raised(exc)}: fix the descriptor's record (it is tried on a "
            "sample of the run's draws before the run starts)"
        ) from None
    _refuse_unrepeatable(name, make, spec.workload, producer_seeds)
    if upserts and repeats / upserts > REPEATS_WARN:
        print(
            f"sealcheck: warning: {repeats / upserts:.0%} of {name}(draw)'s upserts repeat their "
            "key's previous value: a replay of equal values is invisible to every checker; put "
            "draw.number (or draw.writer) in the value",
            file=sys.stderr,
        )


def _refuse_unrepeatable(
    name: str, make: MakeRecord, workload: WorkloadConfig, producer_seeds: Sequence[int]
) -> None:
    """Refuse a ``record(draw)`` that gives another record for the same draw (it drew from the
    ``random`` module, a clock or ``uuid4``): the same seed would not give the same records."""
    mix = workload.mix()
    for i, seed in enumerate(producer_seeds):
        writer = f"w{i}"
        first = itertools.islice(writer_records(seed, mix, writer, make), REPEATABLE)
        again = itertools.islice(writer_records(seed, mix, writer, make), REPEATABLE)
        for n, ((_, one), (_, two)) in enumerate(zip(first, again, strict=True)):
            if one != two:
                raise ConfigError(
                    f"{name}(draw) gave another record for the same draw (writer {writer}, "
                    f"record {n}): draw values from draw.rng alone — not the random module, a "
                    "clock or uuid4 — so the same seed gives the same records"
                )


def kind(record: Record) -> str:
    """Which kind of record the workload wrote (:data:`UPSERT`, :data:`TOMBSTONE`,
    :data:`NO_KEY`, :data:`NOT_JSON`, :data:`NOT_UTF8`)."""
    if record.key is None:
        return NO_KEY
    if record.value is None:
        return TOMBSTONE
    try:
        json.loads(record.value.decode("utf-8"))
    except UnicodeDecodeError:
        return NOT_UTF8
    except ValueError:
        return NOT_JSON
    return UPSERT


def describe(record: Record, limit: int = 40) -> str:
    """``key b'k5' value b'{"i": 17, …}' (an upsert)``: a record in a message."""
    value = record.value
    shown = "None" if value is None else repr(value[:limit]) + ("…" if len(value) > limit else "")
    return f"key {record.key!r} value {shown} ({kind(record)})"
