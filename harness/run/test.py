"""A test is one value: the serialisable spec (:class:`~sealcheck.harness.run.config.TestConfig`)
and the parts it names, built — the system under test, the backend, the nemeses with the schedule
they planned from the seed, the workload's seeds, the checkers. The session runs any :class:`Test`
without naming a concrete class; a user (or the pytest plugin) can build one in Python and swap any
part, e.g. ``build_test(TestConfig(seed=7), sut=MySystem())``.

Validation follows composition: :func:`build_test` resolves every name the spec gives once (a name
that resolves to nothing is a :class:`~sealcheck.harness.run.config.ConfigError`), then
:meth:`Test.validate` checks the built parts against each other in one pass
(:mod:`sealcheck.harness.run.validate`), and the session provisions what the built nemeses
require (:attr:`Test.requires`). :func:`load_test` does all three for a config file and flags.
"""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sealcheck.core.failpoints import FailpointCatalogue
from sealcheck.core.windows import boundaries
from sealcheck.harness.run.config import (
    ConfigError,
    TestConfig,
    given_settings,
    load_config_and_system,
    with_system_defaults,
)
from sealcheck.harness.run.sample import SampleError, digest, load_sample
from sealcheck.harness.run.validate import (
    backend_capabilities,
    refuse_broken_descriptor,
    validate_parts,
)
from sealcheck.infra.backends import NAMES, BackendFactory, backend_factory
from sealcheck.nemeses import NEMESES, Action, Nemesis, PlanInfo, plan_schedule
from sealcheck.nemeses.registry import build
from sealcheck.systems import SystemUnderTest, run_roles
from sealcheck.systems.registry import SystemNotFound, reference, system


@dataclass
class Test:
    """One test: the spec, the parts it names, and everything decided from its seed."""

    __test__ = False  # not a pytest test class, despite the name

    spec: TestConfig
    system: SystemUnderTest
    backend: BackendFactory
    nemeses: dict[str, Nemesis]
    schedule: list[Action]
    schedule_seed: int
    producer_seeds: list[int]
    checkers: tuple[str, ...] = field(default=())

    @property
    def requires(self) -> frozenset[str]:
        """What the built nemeses require of the run (the session provisions exactly this)."""
        return frozenset().union(*(n.requires for n in self.nemeses.values()))

    def validate(self) -> None:
        """Refuse, in one clear line (:class:`ConfigError`), parts that do not fit together, in
        one pass (:func:`sealcheck.harness.run.validate.validate_parts`): a fault aimed at a role
        the run lacks or one the run cannot host, a scheduled cut of a link the run does not
        have, a system the backend cannot run, a broken mode the system lacks; then a
        descriptor whose own methods fail with placeholder values or on a sample of the run's
        records (:func:`sealcheck.harness.run.validate.refuse_broken_descriptor`)."""
        validate_parts(
            self.spec,
            self.system,
            backend_capabilities(self.backend),
            self.nemeses,
            self.plan_info,
            self.schedule,
        )
        refuse_broken_descriptor(self.spec, self.system, self.producer_seeds)

    @property
    def plan_info(self) -> PlanInfo:
        """What nemeses may know when planning."""
        return plan_info(self.spec, self.system)


def plan_info(spec: TestConfig, sut: SystemUnderTest) -> PlanInfo:
    """What planning faults may know: the run's roles (as their providers declare them:
    :func:`sealcheck.systems.roles.run_roles`) and the system under test's failpoints."""
    return PlanInfo(
        roles=run_roles(sut, spec.backend, spec.brokers, spec.spark),
        failpoints=FailpointCatalogue.of(sut),
        windows=tuple(sut.windows),
        boundaries=tuple(boundaries(sut.windows, sut.commit_files)),
        commit_files=sut.commit_files,
        versions=tuple(sut.versions),
    )


def build_test(
    spec: TestConfig,
    schedule: list[Action] | None = None,
    sut: SystemUnderTest | None = None,
    named: SystemUnderTest | None = None,
) -> Test:
    """Build ``spec``: its system under test (``sut``, when given, replaces the one the spec
    names, and the spec then names ``sut`` as :func:`sealcheck.systems.registry.reference`
    does, so that a replay or a child run rebuilds it; the settings a spec made in Python
    leaves at :class:`TestConfig`'s defaults take ``sut``'s own run defaults, its nemesis mix
    among them, as :func:`load_config` gives a system it names), its backend,
    every seed and the whole fault schedule from ``spec.seed`` (same seed, same test), or
    ``schedule`` as given when replaying. Each name the spec gives is resolved here, once: one
    that names nothing (a system, backend, nemesis or checker) is a :class:`ConfigError`.
    Whether the built parts fit together is :meth:`Test.validate`'s to say. ``named``: the
    system the spec names, already built from its name and options (by :func:`load_test`'s
    config, to read its run defaults), taken as it is rather than built again."""
    try:
        if sut is None:
            sut = named if named is not None else system(spec.system, spec.system_options)
        else:  # saved as the name and options that rebuild it (replay, child runs)
            name, options = reference(sut)
            if name != spec.system:  # a system given in Python: its own defaults, as named
                spec = with_system_defaults(spec, sut, given_settings(spec))
            spec = dataclasses.replace(spec, system=name, system_options=options)
    except SystemNotFound as exc:
        raise ConfigError(str(exc)) from None
    _known(spec.backend in NAMES, f"backend={spec.backend!r}: use " + " or ".join(NAMES))
    for n in dict.fromkeys([*spec.nemeses, *(a.nemesis for a in schedule or ())]):
        _known(n in NEMESES, f"nemesis {n!r} is unknown; known: {', '.join(NEMESES)}")
    if spec.checkers:
        from sealcheck.checkers.registry import CHECKERS

        unknown = [c for c in spec.checkers if c not in CHECKERS]
        _known(not unknown, f"checkers: {unknown} unknown; known: {', '.join(CHECKERS)}")
    spec = _pinned_sample(spec)
    rng = random.Random(spec.seed)
    schedule_seed = rng.getrandbits(63)
    producer_seeds = [rng.getrandbits(63) for _ in range(spec.workload.concurrency)]
    info = plan_info(spec, sut)
    planned = plan_schedule(
        spec.nemeses, schedule_seed, spec.duration_s, spec.nemesis_interval_s, info
    )
    actions = planned if schedule is None else schedule
    names = list(dict.fromkeys([*spec.nemeses, *(a.nemesis for a in actions)]))
    return Test(
        spec,
        sut,
        backend_factory(spec.backend),
        build(names, info),
        actions,
        schedule_seed,
        producer_seeds,
        spec.checkers,
    )


def _pinned_sample(spec: TestConfig) -> TestConfig:
    """``spec`` with its sample's SHA-256 pinned (:mod:`sealcheck.harness.run.sample`); a
    :class:`ConfigError` when the file is missing, or is not the one a replayed run pinned."""
    w = spec.workload
    if not w.sample:
        return spec
    path = Path(w.sample).absolute()
    _known(path.is_file(), f"workload.sample={w.sample!r} is not a file: give a JSON-lines or "
           "Parquet file of key/value records")  # fmt: skip
    try:
        load_sample(path)  # a file that cannot be read: one line now, not in the producers
    except SampleError as exc:
        raise ConfigError(str(exc)) from None
    found = digest(path)
    _known(
        not w.sample_sha256 or w.sample_sha256 == found,
        f"workload.sample={w.sample!r} changed since the run was made (SHA-256 {found[:12]}…, "
        f"pinned {w.sample_sha256[:12]}…): give the sample it was made with",
    )
    pinned = dataclasses.replace(w, sample=str(path), sample_sha256=found)
    return dataclasses.replace(spec, workload=pinned)


def load_test(
    path: Path | None, overrides: dict[str, Any], schedule: list[Action] | None = None
) -> Test:
    """The test of a TOML file and flags (:func:`~sealcheck.harness.run.config.load_config`),
    built and validated: a bad setting, a name that names nothing and parts that do not fit
    together are each one :class:`ConfigError`, before anything starts."""
    spec, named = load_config_and_system(path, overrides)
    test = build_test(spec, schedule, named=named)
    test.validate()
    return test


def _known(ok: bool, what: str) -> None:
    if not ok:
        raise ConfigError(what)
