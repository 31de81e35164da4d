"""Installing Sealcheck collides with nothing: the wheel, installed into a fresh virtualenv, sits
next to a user's project that has its own package under every top-level name Sealcheck used
to install (``pipeline``, ``harness``, ``checkers``, ...), and pytest runs there with
Sealcheck's plugin loaded, the project's packages its own.

The virtualenv is the session's (:mod:`tests.integration.installed`): Sealcheck's wheel and
its dependencies installed from a local wheelhouse with no index, nothing of the checkout on
its path.

The installed wheel also sets itself up: ``python -m sealcheck setup`` copies the jars with the
Maven project the wheel carries into the cache ``SEALCHECK_CACHE`` names, reading nothing of
the checkout (Maven's ``~/.m2`` is warm, so it downloads nothing here; elsewhere it reaches
Maven Central only), and the plugin's ``sealcheck_kafka`` broker runs on the jars it copied.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from tests.integration.installed import Installed, clean_env, run
from tests.product import (
    ROOT,
    TOP_LEVEL,
    in_git_checkout,
    installed_path,
    product_files,
    tracked,
)

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not in_git_checkout(), reason="needs a git checkout"),
]

#: Every top-level package an older Sealcheck installed (and so a user's project may have).
OLD_NAMES = (
    "pipeline",
    "harness",
    "checkers",
    "infra",
    "report",
    "rundir",
    "suts",
    "nemeses",
    "delta_job",
)

#: The package data an installed Sealcheck runs from: the Maven project that copies the jars
#: and the shell scripts ``sealcheck setup`` and the containers backend run on the host.
SETUP_DATA = (
    "sealcheck/infra/resources/jvm/pom.xml",
    "sealcheck/infra/resources/jvm/kafka/pom.xml",
    "sealcheck/infra/resources/jvm/spark-kafka/pom.xml",
    "sealcheck/infra/resources/jvm/spark-delta/pom.xml",
    "sealcheck/infra/resources/jvm/spark-avro/pom.xml",
    "sealcheck/infra/resources/scripts/base-image.sh",
    "sealcheck/infra/resources/scripts/docker-engine.sh",
    "sealcheck/infra/resources/scripts/fuse.sh",
)

#: Where the installed Sealcheck finds what it runs and writes: printed as JSON by the
#: virtualenv's interpreter.
WHERE = """
import json

from sealcheck.infra import jars, paths
from sealcheck.systems.delta_streaming import image as delta_image
from sealcheck.systems.upsert_source import image as upsert_image

sources = upsert_image.package_sources(upsert_image.SOURCES + delta_image.SOURCES)
print(json.dumps({
    "pom": str(jars.POM),
    "scripts": str(paths.scripts_dir()),
    "cache": str(paths.cache_dir()),
    "jars": str(jars.jars_dir()),
    "sources": [str(path) for path in sources.values()],
}))
"""

#: A user's test file: imports each of the project's own sentinels (and ``pipeline.broken``,
#: the module whose import broke every pytest run of such a project), Sealcheck's public API
#: and the modules its CLI, checkers, nemeses, systems and report load; takes the plugin's
#: fixtures (the session's Kafka broker on the jars ``sealcheck setup`` copied); writes where
#: every module came from for the outer test to judge.
USER_TEST = """
import importlib
import json
import os

import pytest

import sealcheck as sealcheck_api

OLD_NAMES = {old_names!r}
SEALCHECK_MODULES = [
    "sealcheck.harness.cli.app",
    "sealcheck.harness.campaigns",
    "sealcheck.checkers.registry",
    "sealcheck.nemeses.registry",
    "sealcheck.systems.registry",
    "sealcheck.report",
    "sealcheck_pytest.plugin",
    "sealcheck_upsert_source.cli",
    "sealcheck_delta_streaming.cli",
]


def test_the_projects_own_packages_and_sealcheck_both_import():
    origins = {{}}
    for name in OLD_NAMES:
        sentinel = importlib.import_module(name + ".sentinel")
        assert sentinel.OWNER == "the user's project", name
        origins[name + ".sentinel"] = sentinel.__file__
    broken = importlib.import_module("pipeline.broken")
    assert broken.OWNER == "the user's project"
    origins["pipeline.broken"] = broken.__file__
    assert sealcheck_api.TestConfig().seed is not None
    origins["sealcheck"] = sealcheck_api.__file__
    for name in SEALCHECK_MODULES:
        origins[name] = importlib.import_module(name).__file__
    with open(os.environ["ORIGINS_JSON"], "w") as out:
        json.dump(origins, out)


@pytest.mark.sealcheck(seeds=[1, 2], nemeses=[["kill"]])
def test_the_plugin_is_loaded(sealcheck, sealcheck_case):
    assert callable(sealcheck)
    assert sealcheck_case.seed in (1, 2)


def test_the_plugins_broker_runs_on_the_jars_the_installed_setup_copied(sealcheck_kafka):
    sealcheck_kafka.create_topic("mine", partitions=2)
    assert sealcheck_kafka.bootstrap.startswith("127.0.0.1:")
"""


def user_project(where: Path) -> Path:
    """A user's repository with its own package under every old name, and one test file."""
    where.mkdir()
    for name in OLD_NAMES:
        package = where / name
        package.mkdir()
        (package / "__init__.py").write_text(f'"""The user\'s own `{name}`."""\n')
        (package / "sentinel.py").write_text('OWNER = "the user\'s project"\n')
    (where / "pipeline" / "broken.py").write_text('OWNER = "the user\'s project"\n')
    (where / "test_my_job.py").write_text(USER_TEST.format(old_names=OLD_NAMES))
    return where


@pytest.fixture(scope="module")
def wheel(installed: Installed) -> tuple[Path, Path, Path]:
    """The wheel, installed into a fresh virtualenv: the wheel, the virtualenv's interpreter
    and its site-packages."""
    return installed.wheel, installed.python, installed.site


@pytest.fixture(scope="module")
def set_up(
    wheel: tuple[Path, Path, Path], tmp_path_factory: pytest.TempPathFactory
) -> tuple[str, Path, list[Path]]:
    """``python -m sealcheck setup`` run by the installed wheel outside the checkout (no
    ``sealcheck/`` of the current directory is found) into a fresh cache: its output, the
    cache, and the wheel's package data as it was before."""
    _, python, site = wheel
    where = tmp_path_factory.mktemp("user")
    cache = where / "cache"
    before = sorted((site / "sealcheck" / "infra" / "resources").rglob("*"))
    env = clean_env() | {"SEALCHECK_CACHE": str(cache)}
    output = run([str(python), "-m", "sealcheck", "setup"], cwd=where, env=env)
    return output, cache.resolve(), before


def test_every_installed_top_level_name_starts_with_sealcheck(
    wheel: tuple[Path, Path, Path],
) -> None:
    built, _, _ = wheel
    names = zipfile.ZipFile(built).namelist()
    tops = {name.split("/", 1)[0] for name in names}
    assert all(top.startswith("sealcheck") for top in tops), sorted(tops)
    (top_level,) = [name for name in names if name.endswith(".dist-info/top_level.txt")]
    declared = set(zipfile.ZipFile(built).read(top_level).decode().split())
    assert declared == set(TOP_LEVEL)


def test_the_wheel_holds_every_product_file_and_the_package_data(
    wheel: tuple[Path, Path, Path],
) -> None:
    built, _, _ = wheel
    names = set(zipfile.ZipFile(built).namelist())
    modules = {name for name in names if name.endswith(".py")}
    expected = {installed_path(path) for path in product_files()}
    # harness/, nemeses/ and checkers/ are copied in through the links (followed, not linked)
    assert {"sealcheck/harness/run/session.py", "sealcheck/nemeses/kill.py"} <= expected
    assert {"sealcheck/checkers/registry.py"} <= expected
    assert sorted(expected - modules) == [], "product files missing from the wheel"
    assert sorted(modules - expected) == [], "modules in the wheel that git does not list"
    data = [
        name
        for name in tracked()
        if name.startswith(("sealcheck/infra/resources/", "sealcheck/report/templates/"))
    ]
    assert len(data) >= 4
    assert {*data, "sealcheck/py.typed"} <= names
    assert set(SETUP_DATA) <= set(data), "the poms and the host's scripts are package data"
    assert sorted(set(SETUP_DATA) - names) == [], "the poms and scripts are missing from the wheel"


def test_a_project_with_every_old_name_runs_pytest_with_sealcheck(
    wheel: tuple[Path, Path, Path], set_up: tuple[str, Path, list[Path]], tmp_path: Path
) -> None:
    _, python, site = wheel
    _, cache, _ = set_up
    project = user_project(tmp_path / "my-project")
    origins_file = tmp_path / "origins.json"
    env = clean_env() | {"ORIGINS_JSON": str(origins_file), "SEALCHECK_CACHE": str(cache)}
    # `python -m pytest` puts the project first on sys.path before the plugins load: the
    # situation in which an installed `pipeline` used to be shadowed and the plugin failed
    output = run(
        [str(python), "-m", "pytest", "-p", "no:cacheprovider", "-q", "test_my_job.py"],
        cwd=project,
        env=env,
    )
    assert "4 passed" in output, output
    origins = json.loads(origins_file.read_text())
    for name, where in origins.items():
        home = project if not name.startswith("sealcheck") else site
        assert Path(where).is_relative_to(home), f"{name} came from {where}, not {home}"
    # the wheel's copies, not links back into a checkout
    assert not (site / "sealcheck" / "harness").is_symlink()
    # the command line too, started from the project (its packages first on sys.path)
    version = run([str(python), "-m", "sealcheck", "--version"], cwd=project, env=env)
    assert version.startswith("sealcheck "), version


def test_the_installed_wheel_sets_itself_up_from_its_own_files(
    wheel: tuple[Path, Path, Path], set_up: tuple[str, Path, list[Path]], tmp_path: Path
) -> None:
    _, python, site = wheel
    output, cache, before = set_up
    data = site / "sealcheck" / "infra" / "resources"
    env = clean_env() | {"SEALCHECK_CACHE": str(cache)}
    where = json.loads(
        run([str(python), "-c", WHERE], cwd=tmp_path, env=env).strip().splitlines()[-1]
    )
    assert Path(where["pom"]) == data / "jvm" / "pom.xml"
    assert Path(where["scripts"]) == data / "scripts"
    assert Path(where["cache"]) == cache
    assert Path(where["jars"]) == cache / "jars"
    # the images' build contexts copy the systems' sources from the installed packages
    assert where["sources"], "no sources for the images"
    for source in where["sources"]:
        assert Path(source).is_relative_to(site), f"{source} is not the installed copy"

    assert str(ROOT) not in output, f"the installed Sealcheck used the checkout:\n{output}"
    lines = output.splitlines()
    assert f"jars: Maven project {data / 'jvm' / 'pom.xml'}" in lines, output
    assert f"fuse: {data / 'scripts' / 'fuse.sh'}" in lines, output
    modules = [line.split(" -> ") for line in lines if line.startswith("jars: ") and " -> " in line]
    assert {name.removeprefix("jars: ") for name, _ in modules} == {
        "kafka",
        "spark-kafka",
        "spark-delta",
        "spark-avro",
    }, output
    for _, folder in modules:
        assert Path(folder).parent == cache / "jars", output
        assert (Path(folder) / ".complete").exists(), folder
        assert any(Path(folder).glob("*.jar")), f"no jars in {folder}"
    # Maven wrote nothing beside the installed poms (site-packages may be read-only)
    assert sorted(data.rglob("*")) == before
