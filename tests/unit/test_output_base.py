"""An output is one subclass of :class:`sealcheck.Output` that defines ``uppers``, ``progress``
and ``export``; the members only outputs observed from outside need (``capture``,
``watch_batches`` with ``between_batches``, ``watch_checkpoint``, ``close``) have defaults the
harness calls without probing. An object written to the earlier protocol (the three methods,
no base) is still taken; one that also has an optional member is refused in one line, since
the harness would not call it. (And a job given to ``build_test`` in Python takes its own run
defaults where the config leaves TestConfig's, as a system named in a config does.)"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import sealcheck
from sealcheck import Job, JobRun, Output, Progress
from sealcheck.harness.run.config import ConfigError, load_config
from sealcheck.harness.run.test import build_test
from sealcheck.systems.api import Settings
from sealcheck.systems.job import JobDeployment
from sealcheck.systems.job_calls import call_output
from sealcheck.systems.outputs.base import Plain


class Ledger(Output):
    """A fifth kind of output: a file of lines, nothing but the three methods."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def uppers(self) -> dict[str, int] | None:
        return {"data": 0, "errors": 0}

    def progress(self) -> Progress | None:
        return Progress({"data": 0, "errors": 0}, {}, settle_s=5.0)

    def export(self, run_dir: Path) -> None:
        (run_dir / "ledger").write_text(self.path.name)


class Earlier:
    """An output written to the earlier protocol: the three methods, no base."""

    def uppers(self) -> dict[str, int] | None:
        return {"data": 3}

    def progress(self) -> Progress | None:
        return None

    def export(self, run_dir: Path) -> None:
        (run_dir / "earlier").write_text("x")


class EarlierWithClose(Earlier):
    def close(self) -> None:
        raise AssertionError("never called")


@dataclass(frozen=True)
class LedgerJob(Job):
    name = "ledger-job"
    kind: str = "ledger"

    def command(self, run: JobRun) -> list[str]:
        return ["true"]

    def output(self, run: JobRun) -> Any:
        if self.kind == "ledger":
            return Ledger(run.dir / "ledger.txt")
        return Earlier() if self.kind == "earlier" else EarlierWithClose()


def _run(tmp_path: Path) -> JobRun:
    return JobRun("127.0.0.1:9092", "t", tmp_path / "job", 100)


def test_the_public_names_are_the_bases() -> None:
    assert sealcheck.Output is Output and isinstance(
        sealcheck.DeltaOutput(None, Path("t")), sealcheck.Output
    )
    for kind in ("SQLiteOutput", "PostgresOutput", "TopicOutput", "DeltaOutput"):
        assert issubclass(getattr(sealcheck, kind), Output), kind


def test_a_fifth_output_is_one_subclass_with_defaults_for_the_rest(tmp_path: Path) -> None:
    out = call_output(LedgerJob(), _run(tmp_path))
    assert isinstance(out, Ledger) and out.between_batches is False
    assert out.capture({"data": 0}) is None and out.close() is None
    assert out.watch_batches(lambda: None) is None
    test = build_test(load_config(None, {"nemeses": ["kill"]}), sut=LedgerJob())
    test.validate()  # the run accepts it before anything starts


def test_the_deployment_calls_the_defaults_without_probing(tmp_path: Path) -> None:
    class _Backend:
        bootstrap = "127.0.0.1:9092"
        name, runs_images = "local", False

    settings = Settings("t", 100, spark="local")
    deployment = JobDeployment(LedgerJob(), _Backend(), settings, tmp_path, tmp_path)  # type: ignore[arg-type]
    assert deployment.capture({}) is None
    deployment.export(tmp_path)
    assert (tmp_path / "ledger").read_text() == "ledger.txt"
    deployment.stop()  # close(): the default


def test_an_output_of_the_earlier_protocol_is_still_taken(tmp_path: Path) -> None:
    out = call_output(LedgerJob("earlier"), _run(tmp_path))
    assert isinstance(out, Plain) and out.uppers() == {"data": 3} and out.capture({}) is None
    out.export(tmp_path)
    assert (tmp_path / "earlier").exists()


def test_one_with_an_optional_member_and_no_base_is_one_line() -> None:
    with pytest.raises(ConfigError) as info:
        build_test(load_config(None, {"nemeses": ["kill"]}), sut=LedgerJob("close")).validate()
    message = str(info.value)
    assert "which has close but does not subclass sealcheck.Output: subclass it" in message
    assert "\n" not in message


def test_a_config_made_in_python_takes_the_systems_own_defaults() -> None:
    """``build_test(TestConfig(seed=7), sut=job)``: what the config leaves at TestConfig's
    defaults takes the job's run defaults (its mix, its windows), as a named system does;
    what it sets stays."""
    from sealcheck import TestConfig, build_test

    plain = build_test(TestConfig(seed=7), sut=LedgerJob()).spec
    named = build_test(load_config(None, {"system": "tests.unit.test_output_base:LedgerJob",
                                          "seed": 7})).spec  # fmt: skip
    same = dataclasses.replace(plain, system=named.system, system_options=named.system_options)
    assert same == named and plain.nemesis_interval_s == Job.run_defaults["nemesis_interval_s"]
    assert plain.nemeses and set(plain.nemeses) <= set(Job.run_defaults["nemeses"])
    mine = build_test(TestConfig(seed=7, nemeses=("kill",), duration_s=16), sut=LedgerJob())
    assert (mine.spec.nemeses, mine.spec.duration_s) == (("kill",), 16)


class Forgot(Output):
    """An output that forgot ``export``."""

    def uppers(self) -> dict[str, int] | None:
        return None

    def progress(self) -> Progress | None:
        return None


@dataclass(frozen=True)
class ForgetfulJob(LedgerJob):
    def output(self, run: JobRun) -> Any:
        return Forgot()


def test_a_subclass_that_does_not_define_a_needed_method_is_one_line_before_the_run() -> None:
    with pytest.raises(ConfigError) as info:
        build_test(load_config(None, {"nemeses": ["kill"]}), sut=ForgetfulJob()).validate()
    message = str(info.value)
    assert "which does not define export(): an Output defines uppers()" in message
    assert "\n" not in message


def test_every_output_of_tables_reads_its_rows_through_one_shape(tmp_path: Path) -> None:
    """Delta, SQLite and PostgreSQL outputs declare the same row fields and read them as one
    :class:`~sealcheck.systems.outputs.rows.RowShape`: the dead letters keyed by their own
    column when given, else by the data's; metadata and a reader's own columns never compared."""
    from sealcheck import DeltaOutput, PostgresOutput, SQLiteOutput
    from sealcheck.systems.outputs.rows import RowShape

    delta = DeltaOutput(None, tmp_path / "t", "id", tmp_path / "e", exclude=("batch_id",))
    sqlite = SQLiteOutput(tmp_path / "db", "t", "id", errors="e", exclude=("batch_id",))
    postgres = PostgresOutput("postgresql://x/y", "t", "id", errors="e", exclude=("batch_id",))
    assert (
        delta.row_shape
        == sqlite.row_shape
        == postgres.row_shape
        == RowShape("id", None, None, ("batch_id",))
    )
    row = {"id": "k1", "pos": 3, "batch_id": 7, "_commit_version": 2}
    key, value = delta.row_shape.encoder("data", ignore=("_commit_version",))(row)
    assert value == sqlite.row_shape.encoder("data")({"id": "k1", "pos": 3, "batch_id": 9})[1]
    own = RowShape("id", errors_key="offset")
    assert own.encoder("errors")({"offset": 4, "id": None, "raw": "x"})[0] != key
    assert own.encoder("data").key == ("id",) and own.encoder("errors").key == ("offset",)
