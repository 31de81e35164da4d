"""Sealcheck's pytest plugin (entry point ``pytest11``: installed with Sealcheck, active in
every pytest session of that environment).

* fixture ``sealcheck``: a factory, ``sealcheck(system=MyJob(), seed=..., nemeses=[...],
  **settings)`` (``system``: a system object, a registered name or ``package.module:Factory``;
  default: the ini option ``sealcheck_system``), that runs one chaos test and returns a
  :class:`~sealcheck.harness.campaigns.verdicts.ChaosResult` (verdict, failing checkers, anomalies,
  report
  path, reproduce commands);
* marker ``@pytest.mark.sealcheck(seeds=[1, 2], nemeses=[["kill"], ["pause", "zombie"]])``:
  one test case per seed x nemesis set, handed to the factory through the ``sealcheck_case``
  fixture (the factory uses it when ``seed``/``nemeses`` are not given);
* fixture ``sealcheck_kafka``: a running local Kafka broker for the session (``.bootstrap``,
  ``.create_topic(name, partitions)``), for a user's own tests beside the chaos runs; the
  chaos runs use it too (one broker per session, so per pytest-xdist worker), each on a
  topic of its own, unless a run's faults act on brokers (``kill-kafka``, ``partition``,
  ``lost-writes-kafka``), it asks for three, or its backend is ``containers``: such a run
  starts its own (``--sealcheck-own-kafka``: every run does);
* fixture ``sealcheck_postgres``: the DSN of an empty PostgreSQL database of the test's own,
  on one server in a container for the session (the locally built ``sealcheck-postgres``
  image; skipped, saying why, where no Docker engine can be started), for a job whose sink is
  PostgreSQL;
* JUnit XML (``pytest --junitxml``): every run records ``sealcheck_seed``,
  ``sealcheck_verdict``, ``sealcheck_report`` and ``sealcheck_reproduce`` properties — per
  test case under ``junit_family`` ``xunit1`` / ``legacy``; under ``xunit2`` (pytest's default,
  whose schema has no per-test properties) as the suite's properties, each name prefixed by
  the test's node id (``<nodeid>::sealcheck_seed``), without pytest's incompatibility warning
  — under pytest-xdist (``-n 2``), whose workers cannot record suite properties, per test
  case (set ``junit_family = xunit1`` for a file that is valid by its schema);
* a failing test's report gets a ``sealcheck`` section: the verdict, the first anomalies (the
  first wrong step first), the report path and the exact commands that repeat the run —
  except for a run whose summary the failure (``assert_valid`` / ``assert_invalid``) already
  carries, so it is printed once.

Options: ``--sealcheck-runs DIR`` (keep runs there; default: pytest's temporary directory),
``--sealcheck-backend local|containers``, ``--sealcheck-own-kafka``, ``--sealcheck-seeds 1-20``
(override every marker's seeds: a nightly job runs more seeds of the same tests),
``--sealcheck-timeout SEC``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Generator, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from sealcheck.harness.campaigns.child_run import run_chaos
from sealcheck.harness.campaigns.suite_spec import SuiteError, parse_seeds
from sealcheck.harness.campaigns.verdicts import ChaosResult, VerdictError
from sealcheck.systems.api import SystemUnderTest
from sealcheck.systems.registry import SystemNotFound, reference
from sealcheck_pytest.runner import Case, run_name

_RESULTS = pytest.StashKey[list[ChaosResult]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    """The plugin's command-line options."""
    group = parser.getgroup("sealcheck", "Sealcheck chaos runs")
    group.addoption("--sealcheck-runs", default=None, help="keep runs in this directory")
    group.addoption(
        "--sealcheck-backend",
        choices=("local", "containers"),
        default=None,
        help="backend of every run that does not name one (default local)",
    )
    group.addoption(
        "--sealcheck-seeds",
        default=None,
        help="seeds for every @pytest.mark.sealcheck test, e.g. 1-20 or 1,5,9",
    )
    parser.addini(
        "sealcheck_system",
        "the system under test of every run that names none: a registered name (entry-point "
        "group sealcheck.systems) or package.module:Factory (default upsert-source)",
        default="upsert-source",
    )
    group.addoption(
        "--sealcheck-own-kafka",
        action="store_true",
        help="every run starts brokers of its own (default: a local run whose faults leave "
        "brokers alone uses the session's broker, on a topic of its own)",
    )
    group.addoption(
        "--sealcheck-timeout",
        type=float,
        default=1800.0,
        help="seconds one run may take before it is stopped (its verdict is then UNKNOWN)",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Register the marker."""
    config.addinivalue_line(
        "markers",
        "sealcheck(seeds=(1,), nemeses=(None,)): one case per seed x nemesis set (None: the "
        "system's default mix); the `sealcheck` fixture runs each",
    )


def _seeds_option(text: str) -> list[int]:
    """``--sealcheck-seeds`` as seeds (the suite file's syntax); a usage error if wrong."""
    try:
        return parse_seeds(text)
    except SuiteError as exc:
        raise pytest.UsageError(f"--sealcheck-seeds {text!r}: {exc}") from None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrise a marked test over its seeds x nemesis sets."""
    marker = metafunc.definition.get_closest_marker("sealcheck")
    if marker is None:
        return
    if "sealcheck_case" not in metafunc.fixturenames:
        raise pytest.UsageError(
            f"{metafunc.definition.nodeid} is marked @pytest.mark.sealcheck but uses neither "
            "the sealcheck fixture nor sealcheck_case; add a `sealcheck` argument"
        )
    given = metafunc.config.getoption("sealcheck_seeds")
    seeds: Sequence[int] = _seeds_option(given) if given else marker.kwargs.get("seeds", (1,))
    sets: Sequence[Sequence[str] | None] = marker.kwargs.get("nemeses", (None,))
    unknown = set(marker.kwargs) - {"seeds", "nemeses"}
    if unknown:
        raise pytest.UsageError(
            f"@pytest.mark.sealcheck got {sorted(unknown)}; it takes seeds=[...] and "
            "nemeses=[[...], ...] (other settings go to the sealcheck fixture)"
        )
    cases = [Case(int(s), tuple(n) if n else None) for n in sets for s in seeds]
    metafunc.parametrize("sealcheck_case", cases, ids=[c.id for c in cases])


@pytest.fixture
def sealcheck_case(request: pytest.FixtureRequest) -> Case:
    """This case's seed and nemesis set (seed 1 and the default mix outside the marker)."""
    return getattr(request, "param", Case(1))


def _recorder(request: pytest.FixtureRequest) -> Callable[[str, object], None]:
    """How this test records a property: per test case (what ``record_property`` does, without
    its warning) unless a JUnit XML of family ``xunit2`` is written, whose schema has no
    per-test properties; then as a suite property named ``<nodeid>::<name>``."""
    config = request.config
    xunit2 = bool(getattr(config.option, "xmlpath", None)) and config.getini(
        "junit_family"
    ) not in ("xunit1", "legacy")
    node = request.node
    # a pytest-xdist worker cannot record suite properties (pytest issue 7767): per test case
    if not xunit2 or hasattr(config, "workerinput"):
        return lambda name, value: node.user_properties.append((name, value))
    suite: Callable[[str, object], None] = request.getfixturevalue("record_testsuite_property")
    return lambda name, value: suite(f"{node.nodeid}::{name}", value)


class NemesisNotPlayed(UserWarning):
    """A chaos test asked for a nemesis its run gave no fault (too few fault windows for the
    nemeses asked for): the test passed without it. Shown in pytest's warnings summary; make it
    an error with ``-W error::sealcheck_pytest.plugin.NemesisNotPlayed``."""


@pytest.fixture
def sealcheck(
    request: pytest.FixtureRequest,
    sealcheck_case: Case,
    tmp_path_factory: pytest.TempPathFactory,
) -> Callable[..., ChaosResult]:
    """A factory that runs one chaos test: ``sealcheck(system=None, *, seed=None,
    nemeses=None, backend=None, broken=None, duration=None, interval=None, keys=None,
    rate=None, config=None, **settings)``. ``system`` is a registered name, a
    ``package.module:Factory`` reference or a system object (``MyJob()``: rebuilt in the run's
    process from its class and options); None: the ini option ``sealcheck_system``.
    ``seed``/``nemeses`` default to the marker's case; ``settings`` are any ``sealcheck run
    --set`` names (``final_timeout_s=120``; dotted ones as ``**{"workload.zipf_s": 1.3}``)."""
    option = request.config.getoption
    where = option("sealcheck_runs")
    runs = Path(where) if where else tmp_path_factory.mktemp("sealcheck")
    results = request.node.stash.setdefault(_RESULTS, [])
    record_property = _recorder(request)

    def run(
        system: str | SystemUnderTest | None = None,
        *,
        seed: int | None = None,
        nemeses: Sequence[str] | None = None,
        **settings: Any,
    ) -> ChaosResult:
        if system is None:
            system = str(request.config.getini("sealcheck_system"))
        if isinstance(system, SystemUnderTest):  # run by the name and options that rebuild it
            try:
                system, options = reference(system)
            except SystemNotFound as exc:
                raise pytest.UsageError(str(exc)) from None
            settings["system_options"] = {**options, **settings.get("system_options", {})}
        chosen = sealcheck_case.seed if seed is None else seed
        faults = nemeses if nemeses is not None else sealcheck_case.nemeses
        settings.setdefault("backend", option("sealcheck_backend"))
        name = run_name(request.node.nodeid) + (f"-{len(results)}" if results else "")
        # the session's broker, offered to a local run (which takes it unless its faults act
        # on brokers): a broker's start saved per test
        local = settings["backend"] in (None, "local")
        kafka = _session_kafka(request) if local else ""
        out = run_chaos(
            runs,
            name,
            chosen,
            faults,
            {"system": system, **settings},
            option("sealcheck_timeout"),
            kafka,
        )
        results.append(out)
        if out.unplanned:  # a nemesis the test asked for never played: a pass proves less
            warnings.warn(NemesisNotPlayed(f"{out.run_dir}: {out.unplanned}"), stacklevel=2)
        record_property("sealcheck_seed", out.seed)
        record_property("sealcheck_verdict", out.verdict)
        record_property("sealcheck_report", str(out.report))
        if out.reproduce:
            record_property("sealcheck_reproduce", out.reproduce[0])
        return out

    return run


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A failing test's report gets the ``sealcheck`` section: the summary of each run whose
    summary the failure does not already carry (``assert_valid`` raises it)."""
    report = yield
    raised = call.excinfo.value if call.excinfo is not None else None
    told = raised.result if isinstance(raised, VerdictError) else None
    runs = [r for r in item.stash.get(_RESULTS, []) if r is not told]
    if report.when == "call" and report.failed and runs:
        report.sections.append(("sealcheck", "\n\n".join(r.summary() for r in runs)))
    return report


@pytest.fixture(scope="session")
def sealcheck_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One local Kafka broker (KRaft) for the session: ``.bootstrap``,
    ``.create_topic(name, partitions=...)``; stopped at the end of the session."""
    from sealcheck.infra.kafka_local import KafkaCluster

    cluster = KafkaCluster(tmp_path_factory.mktemp("sealcheck-kafka"))
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


def _session_kafka(request: pytest.FixtureRequest) -> str:
    """The bootstrap of the session's broker (:func:`sealcheck_kafka`, started at its first
    use); "" when ``--sealcheck-own-kafka`` asks every run to start its own."""
    if request.config.getoption("sealcheck_own_kafka"):
        return ""
    return str(request.getfixturevalue("sealcheck_kafka").bootstrap)


@pytest.fixture(scope="session")
def _sealcheck_postgres_server() -> Iterator[Any]:
    from sealcheck.infra.containers.images import (
        EngineUnavailableError,
        ensure_engine,
        postgres_image,
    )
    from sealcheck.infra.containers.postgres import PostgresContainer

    try:
        ensure_engine()
    except EngineUnavailableError as exc:
        pytest.skip(f"sealcheck_postgres needs a Docker engine: {exc}")
    server = PostgresContainer(postgres_image(), run_id="sealcheck-pytest-postgres")
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def sealcheck_postgres(_sealcheck_postgres_server: Any) -> str:
    """The DSN of an empty PostgreSQL database of this test's own (one server in a container
    for the session, stopped at its end)."""
    dsn: str = _sealcheck_postgres_server.new_database("test")
    return dsn
