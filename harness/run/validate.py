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

from collections.abc import Mapping, Sequence
from pathlib import Path

from sealcheck.core.capabilities import CAPABILITIES
from sealcheck.core.effects import EffectError
from sealcheck.core.roles import Role
from sealcheck.harness.run.config import ConfigError, TestConfig
from sealcheck.harness.run.tried import (
    refuse_broken_effect,
    refuse_broken_records,
    sample_records,
)
from sealcheck.harness.run.workload import (
    TOPIC,
)
from sealcheck.nemeses import Action, Nemesis, PlanInfo
from sealcheck.nemeses.partition import Partition
from sealcheck.nemeses.registry import lacking
from sealcheck.rundir.version_effects import check_versions
from sealcheck.systems import SYSTEMS, SystemUnderTest, every_role, run_roles
from sealcheck.systems.job import Job, JobRun, check_job
from sealcheck.systems.job_calls import DescriptorError
from sealcheck.systems.job_image import project_sources

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
    system's mapping of records to effects on a sample of the run's own records — each
    version's, when they differ (:func:`refuse_broken_effect`)."""
    if isinstance(sut, Job):
        where = Path(spec.runs_dir).absolute() / spec.name / "not-started" / "work" / "job"
        run = JobRun.placeholder(TOPIC, where, spec.max_records_per_step, spec.broken, spec.backend)
        try:
            check_job(sut, run)
            if spec.backend == "containers" and sut.builds_image():  # from its installed project
                project_sources(sut)
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
    versions = sut.version_effects()
    if versions is not None:
        for version, each in versions.mappings[1:]:
            said = f"{name}.effect(record, version={version!r})"
            refuse_broken_effect(said, each, spec, producer_seeds, make)
        try:  # the versions agree but in the columns one adds; migrate takes the old rows
            check_versions(sample_records(spec.workload, producer_seeds, spec.partitions, make),
                           versions)  # fmt: skip
        except EffectError as exc:
            raise ConfigError(f"{name}: {exc}") from None


#: ``test.json``'s line naming the system's commit boundaries its run cannot hold (None: none)
NOT_HELD = "not_held"


def unheld_boundaries(backend: str, sut: SystemUnderTest) -> str | None:
    """One line naming ``sut``'s commit boundaries that no fault of a run on ``backend`` can
    hold — they are held from below, on a lazy disk under the job's directory (the ``boundary``
    and ``crash-at-sync`` nemeses), which that backend, or this machine, cannot give — for the
    run to print with its coverage, so a run on containers never passes for one that crashed
    the job at its boundaries (None: it can hold them, or the system declares none)."""
    from sealcheck.core.windows import boundaries
    from sealcheck.infra.backends import NAMES, capabilities
    from sealcheck.infra.lazy_disk import fuse_missing

    held = sorted(boundaries(sut.windows, sut.commit_files))
    if not held or backend not in NAMES:
        return None
    if "lazy-disk" not in capabilities(backend) | sut.offers(backend):
        why = f"the {backend} backend has no lazy disk for them: --backend local holds them"
    elif fuse_missing():
        why = "FUSE is not available here (`sealcheck setup` says why)"
    else:
        return None
    shown = ", ".join(held[:3]) + (f" and {len(held) - 3} more" if len(held) > 3 else "")
    return f"not held: the system's {len(held)} commit boundaries ({shown}): {why}"
