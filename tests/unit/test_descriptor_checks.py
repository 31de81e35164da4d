"""A user's descriptor is checked before anything starts: a job's ``output``, ``command`` and
``environment`` are called with placeholder values, and its ``effect`` is tried on a sample of
the run's own records (every kind the workload writes among them) — each failure one line that
names the method and the exception or the value, refused like a bad setting (exit 254, no run
directory, no Kafka). Where the run calls them for real (the deployment, each launch), a
failure is the same one line, recorded in the run's history."""

from __future__ import annotations

import itertools
import json
import random
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import sealcheck
from sealcheck import SKIP, DeadLetter, Delete, DeltaOutput, Job, JobRun, Record, Upsert
from sealcheck.core.effects import Effects
from sealcheck.harness.run.config import ConfigError, load_config
from sealcheck.harness.run.progress import Display
from sealcheck.harness.run.session import Session, Teardown
from sealcheck.harness.run.test import Test, build_test, load_test
from sealcheck.harness.run.tried import SAMPLE, SAMPLE_MAX, kind, sample_records
from sealcheck.harness.run.workload import NO_KEY, NOT_JSON, NOT_UTF8, TOMBSTONE, UPSERT, records
from sealcheck.rundir.history_writer import HistoryWriter
from sealcheck.systems.api import Settings
from sealcheck.systems.job_calls import DescriptorError
from tests.cli_runs import sealcheck_with_module
from tests.product import ROOT

BEFORE = "fix the descriptor (it is called before the run starts, with placeholder values and "
AT_RUN = "fix the descriptor (it was called with the run's own values)"


@dataclass(frozen=True)
class Broken(Job):
    """A descriptor that goes wrong as ``fault`` says (correct when it says nothing)."""

    name = "broken-job"
    fault: str = ""

    def command(self, run: JobRun) -> Any:
        if self.fault == "command-str":
            return "python -m job"
        if self.fault == "command-late" and run.dir.exists():
            raise RuntimeError("no launcher in the run's directory")
        if self.fault == "command-float":
            return [sys.executable, "-m", "job", "--rate", 1.5]
        batch = ["--max-offsets", run.max_records_per_step]  # a whole number, as always taken
        return [sys.executable, "-m", "job", "--dir", run.dir, "--topic", run.topic, *batch]

    def environment(self, run: JobRun) -> Any:
        return {"N": 5} if self.fault == "environment" else {"TZ": "UTC"}

    def output(self, run: JobRun) -> Any:
        if self.fault == "output-raises":
            raise ValueError("no table given")
        if self.fault == "output-none":
            return None
        if self.fault == "output-late" and run.dir.parent.exists():
            raise RuntimeError("the table moved")
        if self.fault == "show-run":  # what it was called with, told through the message
            seen = (run.bootstrap, run.topic, run.dir.exists(), run.max_records_per_step)
            raise ValueError(f"{seen} {run.broken} {run.master} {run.dir}")
        return DeltaOutput(run.dir / "checkpoint", run.dir / "table", key="id")

    def effect(self, record: Record) -> Effects:
        if self.fault == "effect-42":
            return 42  # type: ignore[return-value]
        if record.key is None:
            return SKIP
        if record.value is None:
            if self.fault == "effect-tombstone":
                raise KeyError("x")
            return Delete(record.key.decode())
        try:
            doc = json.loads(record.value.decode())
        except ValueError:
            return DeadLetter(record.key.decode(), {"offset": record.offset})
        return Upsert(record.key.decode(), {"i": doc["i"]})


def _validated(fault: str, **settings: Any) -> Test:
    test = build_test(load_config(None, {"nemeses": ["kill"], **settings}), sut=Broken(fault))
    test.validate()
    return test


def _refusal(fault: str, **settings: Any) -> str:
    with pytest.raises(ConfigError) as info:
        _validated(fault, **settings)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_an_output_that_raises_is_one_line_naming_the_method_and_the_exception() -> None:
    assert _refusal("output-raises") == (
        f"Broken.output(run) raised ValueError: no table given: {BEFORE}run.dir not created yet)"
    )


def test_a_descriptor_is_called_with_documented_placeholder_values(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    message = _refusal("show-run", broken=None, max_records_per_step=777, runs_dir=str(runs))
    assert "('127.0.0.1:9092', 'upserts', False, 777) None None" in message
    assert f" {runs.absolute()}/chaos/" in message  # under the archive, and not there yet
    assert not runs.exists()


def test_an_output_of_the_wrong_type_says_what_to_return() -> None:
    message = _refusal("output-none")
    assert message.startswith("Broken.output(run) returned None (NoneType): return an Output")
    assert "uppers(), progress(), export(run_dir)" in message and "DeltaOutput(" in message


def test_a_command_given_as_one_string_says_to_give_a_list() -> None:
    assert _refusal("command-str") == (
        "Broken.command(run) returned 'python -m job' (str): return a list of arguments, e.g. "
        '["python", "-m", "job"]'
    )


def test_a_command_takes_whole_numbers_as_their_digits_and_refuses_other_values() -> None:
    _validated("")  # the correct descriptor passes an int (run.max_records_per_step) as before
    assert _refusal("command-float").endswith(
        "argument 4 is 1.5 (float): give every argument as text, a path or a whole number, "
        "e.g. str(1.5)"
    )


def test_an_environment_with_a_number_names_the_variable_and_its_value() -> None:
    assert _refusal("environment") == (
        "Broken.environment(run) returned {'N': 5} (dict): the value of 'N' is 5 (int): give "
        'every name and value as text, e.g. {"N": "5"}'
    )


def test_an_effect_that_returns_a_number_names_it_the_record_and_what_to_return() -> None:
    message = _refusal("effect-42")
    assert message.startswith("Broken.effect(record) returned 42 (int) for the record key b'k")
    assert message.endswith(
        "(an upsert): return Upsert(key, row), Delete(key), DeadLetter(key, row), a list of "
        "them, or SKIP"
    )


def test_an_effect_that_raises_only_on_tombstones_is_found_before_the_run() -> None:
    message = _refusal("effect-tombstone")
    assert message.startswith("Broken.effect(record) raised KeyError: 'x' for the record key b'k")
    assert "value None (a tombstone): fix the descriptor's effect" in message
    # a workload without tombstones never calls it on one: nothing to refuse
    _validated("effect-tombstone", **{"workload.tombstone_ratio": 0.0})


def test_a_correct_descriptor_passes() -> None:
    test = _validated("")
    assert test.system.effect_mapping() is not None


@pytest.mark.parametrize(
    "factory",
    [
        "user_job_sealcheck:UserJob",
        "user_job_sqlite_sealcheck:UserJobSQLite",
        "user_job_kafka_sealcheck:UserJobKafka",
        "orders_sealcheck:Orders",
    ],
)
def test_the_worked_examples_descriptors_pass(
    factory: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(ROOT / "examples" / "user_job"))
    monkeypatch.syspath_prepend(str(ROOT / "examples" / "orders"))
    monkeypatch.setattr(sealcheck, "spark_kafka_jars", list)  # no jar cache needed here
    monkeypatch.setattr(sealcheck, "delta_jars", list)
    monkeypatch.setattr(sealcheck, "spark_avro_jars", list)
    test = load_test(None, {"system": factory, "nemeses": ["kill"]})
    assert test.system.effect_mapping() is not None


def test_the_sample_is_the_producers_records_with_every_kind() -> None:
    spec = load_config(None, {})
    seeds = [11, 12]
    sample = list(sample_records(spec.workload, seeds, spec.partitions))
    assert len(sample) == SAMPLE  # every kind within the first 2,000 records
    mix = spec.workload.mix()
    streams = [records(random.Random(s), mix, tag=f"w{i}") for i, s in enumerate(seeds)]
    sent = list(itertools.islice((p for turn in zip(*streams, strict=True) for p in turn), SAMPLE))
    assert [(r.key, r.value) for r in sample] == sent  # same seeds, same records
    assert {kind(r) for r in sample} == {UPSERT, TOMBSTONE, NO_KEY, NOT_JSON, NOT_UTF8}
    for p in range(spec.partitions):  # placeholder offsets: counted per partition
        offsets = [r.offset for r in sample if r.partition == p]
        assert offsets == list(range(len(offsets)))
    plain = load_config(None, {"workload.tombstone_ratio": 0.0, "workload.bad_ratio": 0.0})
    assert {kind(r) for r in sample_records(plain.workload, seeds, 3)} == {UPSERT}
    rare = load_config(None, {"workload.bad_ratio": 0.0003})  # a bad record per 10,000
    longer = list(sample_records(rare.workload, seeds, 3))
    assert SAMPLE < len(longer) <= SAMPLE_MAX
    assert {NO_KEY, NOT_JSON, NOT_UTF8} & {kind(r) for r in longer}


class _Backend:
    bootstrap = "127.0.0.1:1"
    name, runs_images = "local", False


def test_at_deploy_a_failing_method_is_a_descriptor_error(tmp_path: Path) -> None:
    settings = Settings("upserts", 500)
    work = tmp_path / "work"
    work.mkdir()
    with pytest.raises(DescriptorError) as info:
        Broken("output-late").deploy(_Backend(), settings, work, tmp_path)  # type: ignore[arg-type]
    assert str(info.value) == f"Broken.output(run) raised RuntimeError: the table moved: {AT_RUN}"
    deployment = Broken("command-late").deploy(_Backend(), settings, work, tmp_path)  # type: ignore[arg-type]
    with pytest.raises(DescriptorError, match=r"^Broken.command\(run\) raised RuntimeError"):
        deployment.start()  # with the run's own values, before any incarnation starts
    with pytest.raises(DescriptorError):
        deployment.launch(0)
    launch = Broken("").deploy(_Backend(), settings, work, tmp_path).launch(0)
    assert launch.args[:3] == ("-m", "job", "--dir") and launch.env["TZ"] == "UTC"


def test_the_session_ends_a_run_whose_descriptor_fails_with_one_line_and_its_reason(
    tmp_path: Path,
) -> None:
    """The session's deploy step: a :class:`DescriptorError` becomes the refusal the CLI prints
    (exit 254), and the run's history says why instead of staying empty."""
    test = build_test(load_config(None, {"nemeses": ["kill"]}), sut=Broken("output-late"))
    run_dir = tmp_path / "run"
    (run_dir / "work").mkdir(parents=True)
    history = HistoryWriter(run_dir / "history.jsonl")
    display = Display(enabled=False)
    session = Session(test, run_dir, history, display, Teardown(display))
    session.backend = _Backend()  # type: ignore[assignment]
    with pytest.raises(ConfigError) as info:
        session._start_services()
    history.close()
    assert str(info.value).startswith("Broken.output(run) raised RuntimeError: the table moved")
    ops = [json.loads(line) for line in (run_dir / "history.jsonl").read_text().splitlines()]
    assert [(o["f"], o["value"]["reason"]) for o in ops] == [("never-started", str(info.value))]


MODULE = """
from dataclasses import dataclass
from sealcheck import Job


@dataclass(frozen=True)
class NoOutput(Job):
    def command(self, run):
        return ["job"]

    def output(self, run):
        raise ValueError("no table given")
"""


def test_the_cli_refuses_a_failing_descriptor_in_one_line_starting_nothing(
    tmp_path: Path,
) -> None:
    runs = tmp_path / "runs"
    argv = ["run", "--system", "nooutput:NoOutput", "--runs", str(runs), "--no-progress"]
    proc = sealcheck_with_module(tmp_path, "nooutput", MODULE, *argv, timeout_s=300)
    assert proc.returncode == 254, proc.stdout + proc.stderr
    assert proc.stderr == (
        f"sealcheck run: NoOutput.output(run) raised ValueError: no table given: {BEFORE}"
        "run.dir not created yet)\n"
    )
    assert proc.stdout == ""
    assert not runs.exists()  # no run directory: no Kafka, nothing started


@pytest.mark.parametrize(
    ("nemesis", "declare"),
    [("failpoint", "failpoints = {name: where}"), ("window", 'streaming_windows("checkpoint")')],
)
def test_a_nemesis_the_descriptor_declares_nothing_for_says_what_to_declare(
    nemesis: str, declare: str
) -> None:
    """A job without failpoints (or windows) and ``--nemesis failpoint`` (or ``window``): one
    line saying what to declare, before anything starts (it was an IndexError while the
    schedule was planned: exit 255)."""
    with pytest.raises(ConfigError) as info:
        build_test(load_config(None, {"nemeses": [nemesis]}), sut=Broken("")).validate()
    message = str(info.value)
    assert message.startswith(f"nemesis {nemesis!r} needs ") and "\n" not in message
    assert "declare them in its descriptor" in message and declare in message


@dataclass(frozen=True)
class Forgetful(Broken):
    """An effect that forgot its ``return``: None (SKIP) for every record."""

    def effect(self, record: Record) -> Effects:
        super().effect(record)
        return None


def test_an_effect_that_changes_nothing_for_every_record_says_so() -> None:
    with pytest.raises(ConfigError) as info:
        build_test(load_config(None, {"nemeses": ["kill"]}), sut=Forgetful()).validate()
    assert str(info.value) == (
        "Forgetful.effect(record) changed nothing for any of the 2,000 records tried (it "
        "returned None (NoneType)): a mapping that skips every record says the output stays "
        "empty; did effect() forget to return its Upsert, Delete or DeadLetter?"
    )


def test_a_broken_mode_of_a_descriptor_without_any_says_where_they_are_declared() -> None:
    with pytest.raises(ConfigError) as info:
        _validated("", broken="first-wins")
    message = str(info.value)  # the system as the spec names it: module:Factory
    assert message.startswith("broken='first-wins': '") and message.endswith(
        ":Broken' has no broken modes (a descriptor declares its variants in broken_modes = "
        "{name: what it does wrong})"
    )
