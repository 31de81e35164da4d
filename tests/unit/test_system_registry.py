"""A user's system under test, named from outside Sealcheck: by ``package.module:Factory``, by
an entry point of the user's package, or passed as an object — rebuilt from its saved name and
options in every process of a run; an unknown or unimportable one is one line."""

from __future__ import annotations

import json
import shlex
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from sealcheck.core.windows import streaming_windows
from sealcheck.harness.run.config import ConfigError, load_config
from sealcheck.harness.run.flags import to_flags
from sealcheck.harness.run.test import build_test, load_test
from sealcheck.rundir.files import write_export
from sealcheck.systems.api import Progress, Settings
from sealcheck.systems.job import Job, JobRun
from sealcheck.systems.registry import SystemNotFound, reference, registered, system

USER_MODULE = """
import sys
from dataclasses import dataclass
from sealcheck import SKIP, DeltaOutput, Delete, Job, Upsert


@dataclass(frozen=True)
class UserJob(Job):
    name = "user-job"
    table: str = "accounts"
    sizes: tuple = (1, 2)
    failpoints = {"after_merge": "foreachBatch, after the MERGE committed"}
    broken_modes = {"keeps-deleted-rows": "the MERGE has no delete clause"}

    def command(self, run):
        return [sys.executable, "-m", "user_job", "--dir", str(run.dir)]

    def output(self, run):
        return DeltaOutput(run.dir / "checkpoint", run.dir / self.table, key="id")

    def effect(self, record):
        if record.key is None:
            return SKIP
        if record.value is None:
            return Delete(record.key_text)
        return Upsert(record.key_text, {"raw": record.value.hex()})


def make():
    return UserJob(table="made")


not_a_system = 42
"""


@pytest.fixture
def user_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A user's package ``userpkg`` on the path, registering ``user-job`` as an entry point."""
    (tmp_path / "userpkg").mkdir()
    (tmp_path / "userpkg" / "__init__.py").write_text("")
    (tmp_path / "userpkg" / "system.py").write_text(USER_MODULE)
    info = tmp_path / "userpkg-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: userpkg\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[sealcheck.systems]\nuser-job = userpkg.system:UserJob\nbroken = userpkg.nothere:X\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in [m for m in sys.modules if m.startswith("userpkg")]:
        del sys.modules[name]


def test_a_factory_reference_and_an_entry_point_name_the_same_system(user_package: Path) -> None:
    by_ref = system("userpkg.system:UserJob")
    by_name = system("user-job")
    assert type(by_ref) is type(by_name) and by_ref.name == "user-job"
    assert system("userpkg.system:make").options()["table"] == "made"
    assert system("user-job", {"table": "t2"}).options()["table"] == "t2"
    assert registered()["user-job"] == "userpkg.system:UserJob"
    assert registered()["upsert-source"] == "built in"
    assert type(system("pipeline")).__name__ == "UpsertSource"  # an old name still resolves


@pytest.mark.parametrize(
    ("name", "fragment"),
    [
        ("no-such-job", "is unknown: not a built-in one, no installed package registers it"),
        ("no-such-job", 'entry-points."sealcheck.systems"'),
        ("nopkg.mod:Job", "cannot import nopkg.mod (ModuleNotFoundError"),
        ("broken", "cannot import userpkg.nothere"),
        ("userpkg.system:Nope", "userpkg.system has no Nope"),
        ("userpkg.system:not_a_system", "is not callable"),
        ("userpkg.system:make", "cannot be built with the options"),
    ],
)
def test_a_system_that_names_nothing_is_one_line_saying_how_to_register(
    user_package: Path, name: str, fragment: str
) -> None:
    options = {"nope": 1} if name.endswith(":make") else None
    with pytest.raises(SystemNotFound) as info:
        system(name, options)
    assert fragment in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(ConfigError, match="system"):
        load_test(None, {"system": name, **({"system_options": options} if options else {})})


def test_a_system_object_is_saved_as_what_rebuilds_it(user_package: Path) -> None:
    from userpkg.system import UserJob  # type: ignore[import-not-found]

    spec = load_config(None, {"nemeses": ["kill", "failpoint"]})
    test = build_test(spec, sut=UserJob(table="acc", sizes=(3,)))
    assert test.spec.system == "userpkg.system:UserJob"
    assert test.spec.system_options == {"table": "acc", "sizes": [3]}
    flags = to_flags(test.spec)
    line = shlex.join(flags)
    assert "--system userpkg.system:UserJob" in line
    assert "system_options.table=" in line
    from sealcheck.harness.cli.app import build_parser
    from sealcheck.harness.cli.run import _overrides

    args = build_parser().parse_args(["run", *flags])
    again = load_config(None, _overrides(args))
    assert again == test.spec
    rebuilt = load_test(None, _overrides(args)).system
    assert rebuilt.options() == {"table": "acc", "sizes": [3]}


def test_a_system_that_cannot_be_rebuilt_elsewhere_is_refused() -> None:
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class Local(Job):
        where: str = "x"

    with pytest.raises(SystemNotFound, match="define it at the top level"):
        reference(Local())


def test_a_job_in_containers_needs_its_project_installed_or_an_image(user_package: Path) -> None:
    """Its image is built from the installed project that holds its descriptor: a package
    only on ``sys.path`` has none, and the refusal says both ways out."""
    with pytest.raises(ConfigError) as info:
        load_test(None, {"system": "user-job", "backend": "containers", "nemeses": ["kill"]})
    message = str(info.value)
    assert "no installed project provides" in message and "pip install ." in message
    assert 'image = "my-job:1"' in message
    test = load_test(None, {"system": "user-job", "nemeses": ["kill", "failpoint"]})
    assert test.plan_info.failpoints.names == ("after_merge",)
    assert test.system.effect_mapping() is not None
    with pytest.raises(ConfigError, match="keeps-deleted-rows"):
        load_test(None, {"system": "user-job", "broken": "drops-everything"})


def test_a_config_file_names_a_system_and_its_options(user_package: Path, tmp_path: Path) -> None:
    config = tmp_path / "nightly.toml"
    config.write_text(
        textwrap.dedent(
            """
            system = "user-job"
            [system_options]
            table = "from-toml"
            """
        )
    )
    test = load_test(config, {"system_options.sizes": [5, 6]})
    assert test.system.options() == {"table": "from-toml", "sizes": [5, 6]}
    with pytest.raises(ConfigError, match="system_options=3: expected a table"):
        load_test(None, {"system": "user-job", "system_options": 3})


class FileOutput:
    """A second kind of sink, nothing like Delta: a job that keeps its table in one JSON file
    ``{"upper": u, "rows": {key: value}}`` and seals a step per write."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def uppers(self) -> dict[str, int] | None:
        if not self.path.exists():
            return None
        upper = json.loads(self.path.read_text())["upper"]
        return {"bindings": upper, "data": upper, "errors": upper}

    def progress(self) -> Progress | None:
        ups = self.uppers()
        return None if ups is None else Progress(ups, {})

    def export(self, run_dir: Path) -> None:
        doc = json.loads(self.path.read_text())
        rows = [("data", k.encode(), v.encode(), 0, 1) for k, v in doc["rows"].items()]
        frontiers = {c: {"upper": doc["upper"], "since": 0} for c in ("bindings", "data", "errors")}
        write_export(run_dir, frontiers, [rows])


@dataclass(frozen=True)
class FileJob(Job):
    """The whole descriptor of a job with that sink: three members."""

    name = "file-job"

    def command(self, run: JobRun) -> list[str]:
        return ["file-job", "--out", str(run.dir / "table.json"), "--topic", run.topic]

    def output(self, run: JobRun) -> FileOutput:
        return FileOutput(run.dir / "table.json")


class WindowedJob(FileJob):
    """The same job with its checkpoint's crash windows declared."""

    name = "windowed-job"
    windows = streaming_windows("checkpoint")


class StubBackend:
    bootstrap = "127.0.0.1:9092"
    name, runs_images = "local", False


def test_a_descriptor_for_another_sink_is_as_short(tmp_path: Path) -> None:
    """The base class is shaped for no sink: a job writing a JSON file is three members, and
    its deployment starts it, samples it and exports it through them."""
    settings = Settings("upserts", 500)
    deployment = FileJob().deploy(StubBackend(), settings, tmp_path, tmp_path)  # type: ignore[arg-type]
    launch = deployment.launch(0)
    assert launch.program == ("file-job",)
    assert launch.args == ("--out", str(tmp_path / "job" / "table.json"), "--topic", "upserts")
    assert launch.failpoint_env == "SEALCHECK_FAILPOINTS_FILE"
    assert deployment.uppers() is None
    deployment.start()
    (tmp_path / "job" / "table.json").write_text(json.dumps({"upper": 2, "rows": {"k": "v"}}))
    assert deployment.uppers() == {"bindings": 2, "data": 2, "errors": 2}
    deployment.export(tmp_path / "run")
    assert (tmp_path / "run" / "export" / "updates.parquet").is_file()
    assert FileJob().effect_mapping() is None  # it writes the records as they are
    # no failpoints or windows declared; locally its directory can go on a lazy disk
    assert FileJob().offers("local") == {"spark-cluster", "lazy-disk", "power-cut"}
    assert FileJob().offers("containers") == {"spark-cluster"}
    assert FileJob().opt_in == {"power-cut"}  # never in the default mix: named, it is there
