"""A test is a config with a seed: what to run, for how long, with which faults.

Configs come from a TOML file and/or command-line flags (flags win). Each setting's own shape
(type, range, the settings' defaults) is checked here, so a bad value is one clear line
(:class:`ConfigError`) before anything starts. The names a config gives (system, backend,
nemeses, checkers) are resolved when the test is built, and whether the built parts fit
together is checked on the built test, in one pass (:mod:`sealcheck.harness.run.test`,
:mod:`sealcheck.harness.run.validate`); :func:`sealcheck.harness.run.test.load_test` does all.
"""

from __future__ import annotations

import dataclasses
import math
import re
import tomllib
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sealcheck.harness.run.sample import Sample, load_sample
from sealcheck.harness.run.workload import DISTRIBUTIONS, UpsertMix
from sealcheck.rundir.names import OLD_SYSTEMS, RUNS_DIR

if TYPE_CHECKING:
    from sealcheck.systems.api import SystemUnderTest


class ConfigError(ValueError):
    """A config value is wrong; the message names it and says what would be right."""


@dataclass(frozen=True)
class WorkloadConfig:
    """The producers: how many, how fast, writing what."""

    keys: int = 2_000
    distribution: str = "uniform"  # or "zipf"
    zipf_s: float = 1.1
    tombstone_ratio: float = 0.05
    bad_ratio: float = 0.02
    value_size: int = 32
    rate: float = 400.0  # records per second, all producers together
    concurrency: int = 2  # producer processes (threads with their own producer)
    # A recorded sample replayed as the workload (sealcheck.harness.run.sample: JSON lines or
    # Parquet of key/value records); empty: records drawn from the seed. Its SHA-256 is pinned
    # here when the test is built, so a replay of a run whose sample changed is refused.
    sample: str = ""
    sample_sha256: str = ""

    def recorded(self) -> Sample | None:
        """The recorded sample the producers replay (None: records drawn from the seed)."""
        return load_sample(Path(self.sample)) if self.sample else None

    def mix(self) -> UpsertMix:
        """The record mix of this workload."""
        return UpsertMix(
            keys=self.keys,
            tombstone_ratio=self.tombstone_ratio,
            bad_ratio=self.bad_ratio,
            value_size=self.value_size,
            distribution=self.distribution,
            zipf_s=self.zipf_s,
        )


@dataclass(frozen=True)
class TestConfig:
    """Everything that defines a run; saved as ``test.json`` so it can be repeated."""

    __test__ = False  # not a pytest test class, despite the name

    name: str = "chaos"
    seed: int = 1
    # The system under test: a built-in name, a name a package registers (entry-point group
    # sealcheck.systems) or package.module:Factory (sealcheck.systems.registry), and the options
    # its factory is called with (JSON values).
    system: str = "upsert-source"
    system_options: dict[str, Any] = field(default_factory=dict)
    backend: str = "local"
    # Where the system's Spark driver runs: "connect", one long-lived Spark Connect server per
    # run (a killed incarnation is back in ~2 s), or "local", inside every incarnation (~13 s).
    spark: str = "connect"
    brokers: int = 1
    partitions: int = 3
    duration_s: float = 99.0  # workload and faults; the final phase comes after
    # A nemesis named k times gets k shares of the fault windows: 4 of every 11 windows arm a
    # failpoint, so with a crash costing ~2 s (Spark Connect) a 99 s run (32 windows) reaches
    # every one of the pipeline's failpoints, crashes it at its store's commits after a
    # restart in 2 of every 11 (``boundary``: a mistake between two commits that no failpoint
    # separates), and still kills, pauses, makes a zombie writer, loses a commit's reply and
    # cuts the store's power. Left unset, nemeses the backend cannot host are left out
    # (lost-writes and boundary need the local backend's lazy disk).
    nemeses: tuple[str, ...] = (
        "failpoint",
        "kill",
        "failpoint",
        "boundary",
        "pause",
        "failpoint",
        "zombie",
        "failpoint",
        "boundary",
        "indeterminate",
        "lost-writes",
    )
    nemesis_interval_s: float = 3.0
    final_timeout_s: float = 120.0  # liveness: time allowed to seal the log end after healing
    max_records_per_step: int = 2_000
    broken: str | None = None  # a deliberate bug of the system under test (its broken_modes)
    checkers: tuple[str, ...] = ()  # the checkers that judge the run (empty: every one)
    runs_dir: str = RUNS_DIR  # the archive of runs (sealcheck.rundir.archive)
    workload: WorkloadConfig = field(default_factory=WorkloadConfig)
    # After the verdict, keep Kafka, the store and a last incarnation running until
    # `sealcheck cleanup` (sealcheck.harness.run.leave). How the run ends, not what it is: see
    # HARNESS_FLAGS.
    leave_running: bool = False

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict of what the test is (lists for tuples); the settings of
        :data:`HARNESS_FLAGS`, which only say how the harness ends the run, are left out, so a
        saved config, a replay and a reproduce line never carry them."""
        out = dataclasses.asdict(self)
        out["nemeses"] = list(self.nemeses)
        out["checkers"] = list(self.checkers)
        for name in HARNESS_FLAGS:
            del out[name]
        return out


#: Where a system's Spark driver may run (see ``TestConfig.spark``).
SPARK_MODES = ("connect", "local", "cluster")

#: The longest run a schedule is planned for (the whole schedule is planned up front).
MAX_DURATION_S = 7 * 24 * 3600.0

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def _hostable(cfg: TestConfig, sut: SystemUnderTest) -> tuple[str, ...]:
    """The nemeses of ``cfg`` that its run of ``sut`` can host — every role they act on is a
    role of the run, and its backend and system offer what they require: a default (the mix),
    not a check — a named nemesis the run cannot host is refused by the built test."""
    from sealcheck.infra.backends import NAMES, capabilities
    from sealcheck.infra.lazy_disk import fuse_missing
    from sealcheck.nemeses.api import PlanInfo
    from sealcheck.nemeses.registry import NEMESES, lacking
    from sealcheck.systems.roles import run_roles

    if cfg.backend not in NAMES:
        return cfg.nemeses
    offered = (capabilities(cfg.backend) | sut.offers(cfg.backend)) - sut.opt_in
    if cfg.spark != "cluster":
        offered -= {"spark-cluster"}
    if fuse_missing():  # no lazy disk here: the mix goes without it rather than failing
        offered -= {"lazy-disk", "broker-lazy-disk"}
    info = PlanInfo(roles=run_roles(sut, cfg.backend, cfg.brokers, cfg.spark))

    def hostable(name: str) -> bool:
        if name not in NEMESES:
            return True  # building the test says what is wrong
        nemesis = NEMESES[name](info)
        return not lacking(nemesis, info) and nemesis.requires <= offered

    return tuple(n for n in cfg.nemeses if hostable(n))


def _check(cfg: TestConfig) -> None:
    """Each setting's own shape; how the parts it names fit is the built test's to check
    (:meth:`sealcheck.harness.run.test.Test.validate`)."""

    def need(ok: bool, what: str) -> None:
        if not ok:
            raise ConfigError(what)

    need(bool(_NAME.match(cfg.name)), f"name={cfg.name!r}: use letters, digits, '.', '_', '-'")
    need(cfg.spark in SPARK_MODES, f"spark={cfg.spark!r}: use " + " or ".join(SPARK_MODES))
    need(
        not (cfg.leave_running and cfg.backend == "containers"),
        f"leave_running=true (--leave-running) with backend={cfg.backend!r}: it works on the "
        "local backend only (every run removes the containers of finished harnesses, and an "
        "incarnation's log lives in Docker); run with --backend local --leave-running, or "
        "without --leave-running (the containers' logs are kept in the run's logs/)",
    )
    need(cfg.brokers in (1, 3), f"brokers={cfg.brokers!r}: use 1 or 3")
    need(1 <= cfg.partitions <= 64, f"partitions={cfg.partitions!r}: use 1 to 64")
    need(cfg.duration_s > 0, f"duration_s={cfg.duration_s!r}: must be positive")
    need(
        cfg.duration_s <= MAX_DURATION_S,
        f"duration_s={cfg.duration_s!r}: at most {MAX_DURATION_S:g} (a week); split longer "
        "soaks into several runs",
    )
    need(cfg.nemesis_interval_s >= 1, f"nemesis_interval_s={cfg.nemesis_interval_s!r}: >= 1")
    need(cfg.final_timeout_s > 0, f"final_timeout_s={cfg.final_timeout_s!r}: must be positive")
    need(cfg.max_records_per_step >= 1, "max_records_per_step must be at least 1")
    w = cfg.workload
    need(w.rate > 0, f"workload.rate={w.rate!r}: records per second, must be positive")
    need(1 <= w.concurrency <= 32, f"workload.concurrency={w.concurrency!r}: use 1 to 32")
    need(
        w.distribution in DISTRIBUTIONS,
        f"workload.distribution={w.distribution!r}: use " + " or ".join(DISTRIBUTIONS),
    )
    try:
        w.mix()
    except ValueError as exc:
        raise ConfigError(f"workload: {exc}") from None


def _build(kind: type, values: Any, where: str) -> Any:
    if not isinstance(values, dict):
        raise ConfigError(
            f"{where}={values!r}: expected a table of settings ([{where}] in TOML, "
            f"--set {where}.<name>=<value> on the command line)"
        )
    names = {f.name: f for f in dataclasses.fields(kind)}
    unknown = sorted(set(values) - set(names))
    if unknown:
        raise ConfigError(f"{where}: unknown setting(s) {unknown}; known: {sorted(names)}")
    out = {}
    for key, value in values.items():
        default = getattr(kind(), key)
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if dataclasses.is_dataclass(default):
            continue  # a nested table, built by the caller
        if isinstance(default, dict):
            if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
                raise ConfigError(
                    f"{where}.{key}={value!r}: expected a table of settings ([{key}] in TOML, "
                    f"--set {key}.<name>=<value> on the command line)"
                )
            out[key] = dict(value)
            continue
        if isinstance(default, bool):  # before int: a bool is an int to Python
            if not isinstance(value, bool):
                raise ConfigError(f"{where}.{key}={value!r}: expected true or false")
        elif isinstance(default, tuple):
            if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
                raise ConfigError(f"{where}.{key}={value!r}: expected a list of names")
            value = tuple(value)
        elif isinstance(default, float):
            if not number or not math.isfinite(value):
                raise ConfigError(f"{where}.{key}={value!r}: expected a finite number")
            value = float(value)
        elif isinstance(default, int) and not (
            number and math.isfinite(value) and float(value).is_integer()
        ):
            raise ConfigError(f"{where}.{key}={value!r}: expected a whole number")
        elif isinstance(default, int):
            value = int(value)
        elif (isinstance(default, str) or default is None) and not (
            value is None or isinstance(value, str)
        ):
            raise ConfigError(f"{where}.{key}={value!r}: expected text")
        out[key] = value
    return kind(**out)


def with_system_defaults(
    cfg: TestConfig, sut: SystemUnderTest, given: Collection[str]
) -> TestConfig:
    """``cfg`` with ``sut``'s own run defaults (``SystemUnderTest.run_defaults``) for the
    settings not in ``given``, the containers topology's 3 brokers, and — unless ``nemeses``
    is given — the default mix less what the run cannot host."""
    defaults = {k: v for k, v in sut.run_defaults.items() if k not in given}
    if defaults:  # each checked as the setting it is
        checked = _build(TestConfig, defaults, f"{type(sut).__name__}.run_defaults")
        cfg = dataclasses.replace(cfg, **{k: getattr(checked, k) for k in defaults})
    if cfg.backend == "containers" and "brokers" not in given:
        cfg = dataclasses.replace(cfg, brokers=3)  # the containers topology: 3 brokers
    if "nemeses" not in given:  # the default mix, without what this backend cannot host
        cfg = dataclasses.replace(cfg, nemeses=_hostable(cfg, sut))
    return cfg


def given_settings(cfg: TestConfig) -> frozenset[str]:
    """The settings of a config built in Python (``TestConfig(seed=7, ...)``) that differ from
    :class:`TestConfig`'s defaults: the ones its user gave (a setting given equal to its
    default counts as not given)."""
    plain = TestConfig()
    return frozenset(
        f.name
        for f in dataclasses.fields(TestConfig)
        if f.name != "workload" and getattr(cfg, f.name) != getattr(plain, f.name)
    )


#: settings that were top-level and belong to one system: now its options (a stored
#: ``test.json`` and ``--set retain_steps=0`` still read, as ``system_options.retain_steps``)
MOVED_TO_OPTIONS = {"retain_steps": "upsert-source", "compact_every": "upsert-source",
                    "hold_steps": "upsert-source"}  # fmt: skip


def _system_settings_moved(values: dict[str, Any], stored: bool) -> dict[str, Any]:
    """``values`` with each setting of :data:`MOVED_TO_OPTIONS` moved into ``system_options``
    when the config's system is the one it belongs to, and dropped otherwise when the config is
    a ``stored`` run's (which carried them for every system, none of which read them); given
    to another system on purpose, a :class:`ConfigError`."""
    values = dict(values)
    system = values.get("system", "upsert-source")
    options = values.get("system_options") or {}
    if not isinstance(options, dict):
        raise ConfigError(f"config: system_options={options!r}: expected a table")
    for name, owner in MOVED_TO_OPTIONS.items():
        if name not in values:
            continue
        value = values.pop(name)
        if system == owner:
            options = {name: value, **options}  # a value under system_options wins
        elif not stored:
            raise ConfigError(
                f"{name}={value!r} is a setting of the {owner} system, not of {system}: "
                "leave it out"
            )
    if options:
        values["system_options"] = options
    return values


def _resolved(cfg: TestConfig) -> SystemUnderTest | None:
    """The system ``cfg`` names, or None when it names none (building the test says so)."""
    from sealcheck.systems.registry import SystemNotFound, system

    try:
        return system(cfg.system, cfg.system_options)
    except SystemNotFound:
        return None


def build_config(raw: dict[str, Any], stored: bool = False) -> TestConfig:
    """A config from a dict shaped like :meth:`TestConfig.to_json` (a TOML file, a saved
    ``test.json``), each setting checked (the parts it names are checked once built:
    :func:`sealcheck.harness.run.test.load_test`). ``store_dir``, the old name of ``runs_dir``,
    is still read."""
    return config_and_system(raw, stored)[0]


def config_and_system(
    raw: dict[str, Any], stored: bool = False
) -> tuple[TestConfig, SystemUnderTest | None]:
    """:func:`build_config`, with the system it names as built to read its run defaults (None:
    it names none), for :func:`sealcheck.harness.run.test.load_test` to build the test with
    rather than build it again."""
    if not isinstance(raw, dict):
        raise ConfigError(f"config={raw!r}: expected a table of settings")
    values = dict(raw)
    if "store_dir" in values and "runs_dir" not in values:
        values["runs_dir"] = values.pop("store_dir")
    if isinstance(values.get("system"), str):  # a system's old name (a stored test.json)
        values["system"] = OLD_SYSTEMS.get(values["system"], values["system"])
    values = _system_settings_moved(values, stored)
    workload = values.pop("workload", {})
    try:
        cfg = _build(TestConfig, values, "config")
        cfg = dataclasses.replace(cfg, workload=_build(WorkloadConfig, workload, "workload"))
        sut = _resolved(cfg)
        if sut is not None:  # else building the test says what is wrong
            cfg = with_system_defaults(cfg, sut, set(values))
    except TypeError as exc:
        raise ConfigError(f"config: {exc}") from None
    _check(cfg)
    assert isinstance(cfg, TestConfig)
    return cfg, sut


def load_config(path: Path | None, overrides: dict[str, Any]) -> TestConfig:
    """The config from ``path`` (TOML, optional) with ``overrides`` applied, each setting
    checked (:func:`build_config`)."""
    return load_config_and_system(path, overrides)[0]


def load_config_and_system(
    path: Path | None, overrides: dict[str, Any]
) -> tuple[TestConfig, SystemUnderTest | None]:
    """:func:`load_config`, with the system it names as built (:func:`config_and_system`).

    ``overrides`` keys are top-level names, ``workload.<name>`` or ``system_options.<name>``;
    None values are ignored.
    """
    raw: dict[str, Any] = {}
    if path is not None:
        try:
            raw = tomllib.loads(path.read_text())
        except FileNotFoundError:
            raise ConfigError(f"config file {path} does not exist") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"config file {path} cannot be read: {exc}") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"config file {path} is not valid TOML: {exc}") from None
    for key, value in overrides.items():
        if value is None:
            continue
        head, dot, rest = key.partition(".")
        if dot and head in ("workload", "system_options"):
            table = raw.setdefault(head, {})
            if not isinstance(table, dict):
                raise ConfigError(f"config: {head}={table!r}: expected a table of settings")
            table[rest] = value
        else:
            raw[key] = value
    return config_and_system(raw)


def from_json(doc: dict[str, Any]) -> TestConfig:
    """A config saved by :meth:`TestConfig.to_json` (to repeat a run), checked like a new one
    (:func:`build_config`)."""
    return build_config(doc, stored=True)


#: Settings of how the harness ends a run, not of the test (each a flag without a value):
#: not saved in ``test.json``'s config, not in reproduce lines, not taken from a replayed run.
HARNESS_FLAGS: dict[str, str] = {"leave_running": "--leave-running"}
