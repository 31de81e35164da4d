"""Validate once: the config checks each setting's shape, building the test resolves every name
once, the built test checks in one pass whether its parts fit together, and the session
provisions what the built nemeses require."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

from sealcheck.harness.cli.app import main
from sealcheck.harness.run.config import ConfigError, TestConfig, load_config
from sealcheck.harness.run.session import Session
from sealcheck.harness.run.test import build_test, load_test
from sealcheck.systems.upsert_source import UpsertSource


def test_a_part_that_does_not_fit_is_refused_by_the_built_test_not_by_the_config() -> None:
    raw = {"backend": "containers", "nemeses": ["lost-writes"]}
    cfg = load_config(None, raw)  # each setting is well-formed: the config takes it
    test = build_test(cfg)  # and it builds (planning is pure) ...
    with pytest.raises(ConfigError) as err:
        test.validate()  # ... but the built parts do not fit together
    text = str(err.value)
    assert "nemesis 'lost-writes' needs" in text and "--backend local" in text
    assert "\n" not in text
    with pytest.raises(ConfigError, match=re.escape(text)):
        load_test(None, raw)  # the one entry that does all three says the same


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        (TestConfig(system="nope"), "system 'nope' is unknown: not a built-in one"),
        (TestConfig(backend="cloud"), "backend='cloud': use local or containers"),
        (TestConfig(nemeses=("kill", "explode")), "nemesis 'explode' is unknown"),
        (TestConfig(checkers=("diff_of_one", "vibes")), "checkers: ['vibes'] unknown"),
    ],
)
def test_a_name_that_names_nothing_is_refused_when_the_test_is_built(
    spec: TestConfig, fragment: str
) -> None:
    with pytest.raises(ConfigError, match=re.escape(fragment)):
        build_test(spec)


class _Requires:
    """A nemesis that needs ``requires``, acts on no role and does nothing (stands in for a
    built one)."""

    roles: tuple[str, ...] = ()

    def __init__(self, *requires: str) -> None:
        self.requires = frozenset(requires)


class Mine(UpsertSource):
    """The registered system, with a broken mode of its own."""

    broken_modes = MappingProxyType({"mine": "a bug of my own"})


def test_validation_reads_the_built_parts_not_the_registries() -> None:
    test = build_test(TestConfig(nemeses=("kill",)))
    test.validate()  # the registered parts fit
    # a built nemesis that needs what the run lacks is refused, though the registry's "kill"
    # needs nothing
    swapped = dataclasses.replace(test, nemeses={"kill": _Requires("partition")})
    with pytest.raises(ConfigError, match="nemesis 'kill' needs network partitions"):
        swapped.validate()

    spec = TestConfig(nemeses=("kill",), broken="mine")
    with pytest.raises(ConfigError, match="broken='mine'"):
        build_test(spec).validate()  # the registered system has no such mode
    built = build_test(spec, sut=Mine())
    built.validate()  # the built one has
    assert built.spec.system == f"{__name__}:Mine"  # saved as what rebuilds it


def test_a_bad_composition_is_one_line_and_254_on_the_command_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["run", "--backend", "containers", "--nemesis", "lost-writes", "--no-progress"]
    assert main(argv) == 254
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("sealcheck run: nemesis 'lost-writes' needs"), err


def test_a_replayed_run_whose_parts_no_longer_fit_names_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    cfg = TestConfig(backend="containers", brokers=3, nemeses=("lost-writes",))
    (tmp_path / "test.json").write_text(json.dumps({"config": cfg.to_json(), "schedule": []}))
    assert main(["run", "--replay", str(tmp_path)]) == 254
    err = capsys.readouterr().err
    assert f"cannot replay {tmp_path}: saved nemesis 'lost-writes' needs" in err


class _Display:
    def update(self, **changes: Any) -> None:
        pass

    def log(self, line: str) -> None:
        pass


class _Backend:
    """Records how it was started."""

    runs_images = False
    bootstrap = "b:9092"
    name, runs_images = "local", False
    capabilities = frozenset({"broker-lazy-disk"})

    def __init__(self, brokers: int, work: Path, run_id: str) -> None:
        self.started: dict[str, Any] = {}

    def start(self, topic: str, partitions: int, lazy_brokers: bool = False) -> None:
        self.started = {"topic": topic, "partitions": partitions, "lazy_brokers": lazy_brokers}

    def stop(self, logs: Path) -> None:
        pass


class _Teardown:
    def __init__(self) -> None:
        self.steps: list[str] = []

    def push(self, what: str, fn: object) -> None:
        self.steps.append(what)


@pytest.mark.parametrize(
    ("nemeses", "lazy"), [(("kill",), False), (("kill", "lost-writes-kafka"), True)]
)
def test_the_session_provisions_what_the_built_nemeses_require(
    tmp_path: Path, nemeses: tuple[str, ...], lazy: bool
) -> None:
    test = dataclasses.replace(build_test(TestConfig(nemeses=nemeses)), backend=_Backend)
    assert test.requires == frozenset().union(*(n.requires for n in test.nemeses.values()))
    assert ("broker-lazy-disk" in test.requires) is lazy
    teardown = _Teardown()
    session = Session(test, tmp_path / "t" / "1", None, _Display(), teardown)  # type: ignore[arg-type]
    session._start_kafka()
    assert session.backend.started["lazy_brokers"] is lazy  # type: ignore[attr-defined]
    assert teardown.steps  # Kafka's stop is registered as soon as the backend exists


def test_the_session_hands_out_absolute_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--runs`` may be relative; what the backend and the system are given reaches processes
    that start in directories of their own (a job's, a service's scratch)."""
    monkeypatch.chdir(tmp_path)
    test = dataclasses.replace(build_test(TestConfig(nemeses=("kill",))), backend=_Backend)
    session = Session(test, Path("runs/t/1"), None, _Display(), _Teardown())  # type: ignore[arg-type]
    assert session.work == tmp_path / "runs" / "t" / "1" / "work"
    assert session.logs == tmp_path / "runs" / "t" / "1" / "logs"


def test_run_is_the_list_of_its_phases(tmp_path: Path) -> None:
    """The phases in ``Session.run``'s docstring are the methods it calls, in that order."""
    doc = Session.run.__doc__ or ""
    listed = re.findall(r":meth:`(_\w+)`", doc)
    assert len(listed) >= 10 and len(set(listed)) == len(listed)
    test = build_test(TestConfig(nemeses=("kill",)))
    session = Session(test, tmp_path / "t" / "1", None, _Display(), _Teardown())  # type: ignore[arg-type]
    called: list[str] = []
    for name in listed:
        assert callable(getattr(session, name)), name

        def phase(*args: Any, _name: str = name) -> str:
            called.append(_name)
            return ""

        setattr(session, name, phase)
    session.producers = type("P", (), {"errors": []})()  # type: ignore[assignment]
    assert session.run() == ""
    assert called == listed


def test_a_topic_that_cannot_be_dumped_makes_the_run_unknown_and_the_store_is_still_exported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sealcheck.harness.run import session as session_mod
    from sealcheck.rundir.history import EXPORT_FAILED, FINAL_OP, History
    from sealcheck.rundir.history_writer import HistoryWriter

    def stalled(bootstrap: str, topic: str) -> object:
        raise TimeoutError(f"reading {topic!r}: nothing arrived for 60s")

    mapped: list[Path] = []
    monkeypatch.setattr(session_mod, "read_topic", stalled)
    monkeypatch.setattr(session_mod, "write_expected", lambda d, m, v: mapped.append(d) or ())
    test = build_test(TestConfig(nemeses=("kill",)))
    # the system's class: a descriptor is a frozen dataclass
    monkeypatch.setattr(type(test.system), "effect_mapping", lambda self: "a mapping of its own")
    run_dir = tmp_path / "t" / "1"
    run_dir.mkdir(parents=True)
    history = HistoryWriter(run_dir / "history.jsonl")
    session = Session(test, run_dir, history, _Display(), _Teardown())  # type: ignore[arg-type]
    session.backend = _Backend(1, tmp_path, "r")  # type: ignore[assignment]
    exported: list[Path] = []
    session.deployment = type("D", (), {"export": lambda self, d: exported.append(d)})()  # type: ignore[assignment]
    reason = session._dump("")
    history.close()
    why = "the dump of the topic failed: TimeoutError: reading 'upserts': nothing arrived for 60s"
    assert reason == why
    assert exported == [run_dir]  # the store is exported all the same
    assert mapped == []  # no topic to map
    assert not (run_dir / "topic.parquet").exists() and not (run_dir / "effects.parquet").exists()
    loaded = History.load(run_dir / "history.jsonl")
    assert [op["f"] for op in loaded.ops if op["process"] == "harness"] == [EXPORT_FAILED, FINAL_OP]
    assert loaded.harness_failures() == [f"{why}: the system's output cannot be judged"]
