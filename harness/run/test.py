"""A test is one value: the serialisable spec (:class:`~sealcheck.harness.run.config.TestConfig`)
and the parts it names, built — the system under test, the backend, the nemeses with the schedule
they planned from the seed, the workload's seeds, the checkers. The session runs any :class:`Test`
without naming a concrete class; a user (or the pytest plugin) can build one in Python and swap any
part, e.g. ``build_test(TestConfig(seed=7), system=MySystem())``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from sealcheck.harness.run.config import TestConfig
from sealcheck.infra.backends import BackendFactory, backend_factory
from sealcheck.nemeses import Action, Nemesis, PlanInfo, plan_schedule
from sealcheck.nemeses.registry import build
from sealcheck.systems import SystemUnderTest, system


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
    def plan_info(self) -> PlanInfo:
        """What nemeses may know when planning."""
        return plan_info(self.spec, self.system)


def plan_info(spec: TestConfig, sut: SystemUnderTest) -> PlanInfo:
    """The shape of the system under test, for planning faults."""
    return PlanInfo(
        spec.brokers,
        tuple(sut.failpoints),
        frozenset(sut.startup_failpoints),
        frozenset(sut.late_failpoints),
        tuple(sut.commit_failpoints),
        sut.stall_failpoint,
    )


def build_test(
    spec: TestConfig,
    schedule: list[Action] | None = None,
    sut: SystemUnderTest | None = None,
) -> Test:
    """Build ``spec``: its system under test (``sut`` overrides the registry's), its backend,
    every seed and the whole fault schedule from ``spec.seed`` (same seed, same test), or
    ``schedule`` as given when replaying."""
    sut = sut if sut is not None else system(spec.system)
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
