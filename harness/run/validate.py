"""Whether the built parts of a test fit together, in one pass (:meth:`Test.validate`).

:mod:`sealcheck.harness.run.config` checks each setting's own shape (types, ranges);
:func:`~sealcheck.harness.run.test.build_test` resolves the names the spec gives (a name that
resolves to nothing is a :class:`ConfigError` there). What is left is checked here, against the
parts themselves: the system under test, the backend's capabilities, the run's roles, the
nemeses as built and the schedule they will play — so a fault aimed at a role the run lacks, a
fault the backend cannot host, a scheduled cut of a link the run does not have (a replayed or
shrunk schedule of another run), a system the backend cannot run or a broken mode the system
lacks is one clear line before anything starts (:func:`validate_parts`). So is a descriptor
whose own methods fail (:func:`refuse_broken_descriptor`): a job's ``output``, ``command`` and
``environment`` are called with placeholder values, and the system's mapping of records to
effects is tried on a sample of the run's own records, with every check the mapping gets after
the run.
"""

from __future__ import annotations

import itertools
import json
import sys
import zlib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from sealcheck.core.capabilities import CAPABILITIES
from sealcheck.core.effects import (
    EffectError,
    EffectMapping,
    NotAnEffect,
    Record,
    checked_effects,
)
from sealcheck.core.records import RecordError
from sealcheck.core.roles import Role
from sealcheck.core.said import named
from sealcheck.harness.run.config import ConfigError, TestConfig, WorkloadConfig
from sealcheck.harness.run.workload import (
    BAD,
    NO_KEY,
    NOT_JSON,
    NOT_UTF8,
    TOMBSTONE,
    TOPIC,
    UPSERT,
    MakeRecord,
    writer_records,
)
from sealcheck.nemeses import Action, Nemesis, PlanInfo
from sealcheck.nemeses.partition import Partition
from sealcheck.nemeses.registry import lacking
from sealcheck.systems import SYSTEMS, SystemUnderTest, every_role, run_roles
from sealcheck.systems.job import Job, JobRun, check_job
from sealcheck.systems.job_calls import DescriptorError, raised

#: Capabilities a descriptor offers by declaring something: what to declare, for the refusal.
DECLARE = {
    "failpoints": "declare them in its descriptor (failpoints = {name: where}, each reached "
    "through sealcheck_failpoint.hit: docs/your-own-job.md, section 9)",
    "crash-windows": "declare them in its descriptor (e.g. windows = "
    'sealcheck.streaming_windows("checkpoint"): docs/your-own-job.md, section 9)',
    "commit-boundaries": "declare crash windows told by files in its descriptor (e.g. windows = "
    'sealcheck.streaming_windows("checkpoint"): docs/your-own-job.md, section 9)',
}
#: Requirements met by a lazy (FUSE) disk: a run with a nemesis that needs one needs FUSE.
LAZY_DISKS = frozenset({"lazy-disk", "broker-lazy-disk"})
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
#: The kinds of record a workload writes (:func:`sealcheck.harness.run.workload.records`).


def backend_capabilities(factory: object) -> frozenset[str]:
    """What a built backend factory offers (the registry's factories are the backend classes,
    whose ``capabilities`` say it); a factory that does not say offers nothing optional."""
    offered: frozenset[str] = getattr(factory, "capabilities", frozenset())
    return frozenset(offered)


def _need(ok: bool, what: str) -> None:
    if not ok:
        raise ConfigError(what)


def _hint(option: str, places: list[str]) -> str:
    """``; use --backend local or containers`` (nothing when no place would do)."""
    return f"; use {option} {' or '.join(places)}" if places else ""


def validate_parts(
    spec: TestConfig,
    sut: SystemUnderTest,
    capabilities: frozenset[str],
    nemeses: Mapping[str, Nemesis],
    info: PlanInfo,
    schedule: Sequence[Action] = (),
) -> None:
    """Refuse, in one clear line (:class:`ConfigError`), a composition that cannot run — the
    one validation pass of a built test (:meth:`sealcheck.harness.run.test.Test.validate`): a
    nemesis acting on a role the run (``info.roles``) lacks, a nemesis whose requirements
    neither ``capabilities`` (the backend's) nor ``sut`` offer, a Spark cluster the system
    cannot use, a lazy disk without FUSE, a system the backend cannot host, a broken mode the
    system lacks, an action of ``schedule`` that cuts a link the run does not have."""
    refuse_lacking_roles(spec, sut, info, nemeses)
    _check_parts(spec, sut, capabilities, nemeses)
    refuse_missing_links(nemeses, schedule)


def refuse_lacking_roles(
    spec: TestConfig, sut: SystemUnderTest, info: PlanInfo, nemeses: Mapping[str, Nemesis]
) -> None:
    """Refuse, in one clear line (:class:`ConfigError`), a nemesis that acts on a role the run
    lacks (a database the system keeps no store in, a Spark cluster's workers without one),
    saying what would have it."""
    for name, nemesis in nemeses.items():
        missing = lacking(nemesis, info)
        if not missing:
            continue
        role = missing[0]
        needs = every_role().get(role, Role(role)).requires
        why = " and ".join(CAPABILITIES.get(c, c) for c in sorted(needs))
        raise ConfigError(
            f"nemesis {name!r} acts on the {role} role, which a run of {spec.system!r} on the "
            f"{spec.backend} backend{' with --spark cluster' if spec.spark == 'cluster' else ''}"
            f" does not have" + (f": it needs {why}" if why else "") + _where(spec, sut, role)
        )


def refuse_missing_links(nemeses: Mapping[str, Nemesis], schedule: Sequence[Action]) -> None:
    """Refuse, in one clear line (:class:`ConfigError`), a scheduled partition whose kind is
    not a link of this run (:attr:`Partition.kinds`): a stored schedule replayed or shrunk
    into another run (``sut-database`` where the system keeps no store in the database,
    ``broker`` with one broker) would cut what the run never uses and count as happened."""
    for n, action in enumerate(schedule):
        nemesis = nemeses.get(action.nemesis)
        if not isinstance(nemesis, Partition):
            continue
        kind = action.value.get("kind")
        _need(
            kind in nemesis.kinds,
            f"schedule action {n} ({action.f} at {action.at_s:g}s) cuts link {kind!r}, but the "
            f"run has no such link (its links: {', '.join(nemesis.kinds) or 'none'})",
        )


def _where(spec: TestConfig, sut: SystemUnderTest, role: str) -> str:
    """``; use --backend containers`` (or ``--spark cluster``, ``--system NAME``): the nearest
    run that has ``role``, changing as little of ``spec`` as it can (nothing: none has)."""
    from sealcheck.infra.backends import NAMES

    systems = {spec.system: sut, **{n: make() for n, make in SYSTEMS.items() if n != spec.system}}
    backends = [spec.backend, *(b for b in NAMES if b != spec.backend)]
    sparks = [spec.spark, "cluster"] if spec.spark != "cluster" else ["cluster"]
    for name, other in systems.items():
        for backend in backends:
            for spark in sparks:
                if role in run_roles(other, backend, spec.brokers, spark):
                    changes = [
                        f"--system {name}" if name != spec.system else "",
                        f"--backend {backend}" if backend != spec.backend else "",
                        "--spark cluster" if spark != spec.spark else "",
                    ]
                    verb = "add" if changes[:2] == ["", ""] else "use"
                    return f"; {verb} " + " ".join(c for c in changes if c)
    return ""


def _check_parts(
    spec: TestConfig,
    sut: SystemUnderTest,
    capabilities: frozenset[str],
    nemeses: Mapping[str, Nemesis],
) -> None:
    """What the backend and the system offer against what the parts need."""
    from sealcheck.infra.backends import NAMES
    from sealcheck.infra.backends import capabilities as capabilities_of

    def where(lacking: set[str] | frozenset[str]) -> list[str]:
        """The backends where ``sut`` would have everything in ``lacking`` (for the hint)."""
        return [b for b in NAMES if not set(lacking) - capabilities_of(b) - sut.offers(b)]

    offered = capabilities | sut.offers(spec.backend)
    _need(
        spec.spark != "cluster" or "spark-cluster" in offered,
        f"spark='cluster': {spec.system!r} cannot submit to a Spark cluster; use --spark "
        "connect or local",
    )
    for name, nemesis in nemeses.items():
        _need(
            spec.spark == "cluster" or "spark-cluster" not in nemesis.requires,
            f"nemesis {name!r} acts on a Spark cluster's workers; add --spark cluster",
        )
        lacking = sorted(nemesis.requires - offered)
        declared = "; ".join(DECLARE[c] for c in lacking if c in DECLARE)
        _need(
            not lacking,
            f"nemesis {name!r} needs {' and '.join(CAPABILITIES.get(c, c) for c in lacking)}, "
            f"which {spec.system!r} on the {spec.backend} backend lacks"
            + (f"; {declared}" if declared else _hint("--backend", where(set(lacking)))),
        )
    if any(n.requires & LAZY_DISKS for n in nemeses.values()):
        from sealcheck.infra.lazy_disk import FUSE_HINT, fuse_missing

        why = fuse_missing()
        _need(not why, f"{why}: {FUSE_HINT}")
    lacking = sorted(sut.requires - capabilities)
    hosts = [b for b in NAMES if sut.requires <= capabilities_of(b)]
    _need(
        not lacking,
        f"system {spec.system!r} needs {' and '.join(CAPABILITIES.get(c, c) for c in lacking)}, "
        f"which the {spec.backend} backend lacks" + _hint("--backend", hosts),
    )
    modes = ", ".join(sut.broken_modes)
    _need(
        spec.broken is None or spec.broken in sut.broken_modes,
        f"broken={spec.broken!r}: {spec.system!r} has the broken modes {modes}"
        if modes
        else f"broken={spec.broken!r}: {spec.system!r} has no broken modes (a descriptor "
        "declares its variants in broken_modes = {name: what it does wrong})",
    )


def refuse_broken_descriptor(
    spec: TestConfig, sut: SystemUnderTest, producer_seeds: Sequence[int]
) -> None:
    """Refuse, in one clear line (:class:`ConfigError`), a descriptor whose own methods fail
    before anything starts: a :class:`~sealcheck.systems.job.Job`'s ``output``, ``command``
    and ``environment`` called with :meth:`JobRun.placeholder` values (the run's topic, batch
    size and broken mode; a bootstrap nobody serves, a ``dir`` not created yet), and the
    system's mapping of records to effects on a sample of the run's own records
    (:func:`refuse_broken_effect`)."""
    if isinstance(sut, Job):
        where = Path(spec.runs_dir).absolute() / spec.name / "not-started" / "work" / "job"
        run = JobRun.placeholder(TOPIC, where, spec.max_records_per_step, spec.broken)
        try:
            check_job(sut, run)
        except DescriptorError as exc:
            raise ConfigError(str(exc)) from None
    mapping, make = sut.effect_mapping(), sut.record_maker()
    name = type(sut).__name__
    _need(
        make is None or mapping is not None,
        f"{name} defines record(draw) but not effect(record): Sealcheck's own mapping reads only "
        "its own records; say what each of yours does to the output (docs/your-own-job.md)",
    )
    if make is not None:
        refuse_broken_records(f"{name}.record", make, spec, producer_seeds)
    if mapping is not None:
        refuse_broken_effect(f"{name}.effect", mapping, spec, producer_seeds, make)


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
    for record in sample_records(spec.workload, producer_seeds, spec.partitions, make):
        try:
            result = mapping(record)
        except Exception as exc:
            raise ConfigError(
                f"{name}(record) raised {raised(exc)} for the record {describe(record)}: fix the "
                "descriptor's effect (it is tried on a sample of the run's records before the run "
                "starts)"
            ) from None
        try:
            effects = checked_effects(result)
        except EffectError as exc:  # the whole result no effect: say what to return instead
            why = exc.fix if isinstance(exc, NotAnEffect) and exc.value is result else str(exc)
            raise ConfigError(
                f"{name}(record) returned {named(result)} for the record {describe(record)}: {why}"
            ) from None
        tried += 1
        changing = changing or bool(effects)
        if not effects:
            returned.add(named(result))
    if tried and not changing:  # not one record changes anything: nothing would be judged
        raise ConfigError(
            f"{name}(record) changed nothing for any of the {tried:,} records tried (it returned "
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
