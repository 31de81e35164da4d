"""Installing Sealcheck collides with nothing: the wheel, installed into a fresh virtualenv, sits
next to a user's project that has its own package under every top-level name Sealcheck used
to install (``pipeline``, ``harness``, ``checkers``, ...), and pytest runs there with
Sealcheck's plugin loaded, the project's packages its own.

No network: the virtualenv is seeded by ``virtualenv`` (a dependency of tox, in the ``dev``
extra) from the wheels it carries (pip and a setuptools new enough for ``pyproject.toml``'s
``setuptools>=77``; the project's own ``python -m venv`` one may be older), the wheel is built
without build isolation, and Sealcheck's dependencies come from the environment running this
test through a ``.pth`` line that puts its site-packages *after* the new environment's own — a
path line, so that environment's ``.pth`` files (the editable install's finder among them) are
not run, and ``sealcheck`` is the wheel's copy.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

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

#: A user's test file: imports each of the project's own sentinels (and ``pipeline.broken``,
#: the module whose import broke every pytest run of such a project), Sealcheck's public API
#: and the modules its CLI, checkers, nemeses, systems and report load; takes the plugin's
#: fixtures; writes where every module came from for the outer test to judge.
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
"""


def run(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    """Run a command; its output, or a failure that shows it."""
    done = subprocess.run(
        args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"{' '.join(args)} exited {done.returncode}:\n{output[-4000:]}"
    return output


def clean_env() -> dict[str, str]:
    """This process's environment without what would steer another interpreter's imports."""
    steering = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")
    return {
        key: value
        for key, value in os.environ.items()
        if key not in steering and not key.startswith("PYTEST_")
    }


def copy_checkout(to: Path) -> None:
    """The files git lists (symlinks kept as links), as a clean clone would hold them: the
    build then writes nothing into the working tree."""
    for name in tracked():
        source, target = ROOT / name, to / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            target.symlink_to(os.readlink(source))
        else:
            target.write_bytes(source.read_bytes())


def make_venv(where: Path) -> tuple[Path, Path]:
    """A fresh virtualenv seeded offline; its interpreter and site-packages."""
    run([sys.executable, "-m", "virtualenv", "--no-periodic-update", str(where)], cwd=where.parent)
    python = where / "bin" / "python"
    site = Path(
        run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], where)
        .strip()
        .splitlines()[-1]
    )
    return python, site


def reach_dependencies(site: Path) -> None:
    """Make Sealcheck's dependencies reachable from the virtualenv, after its own site-packages.
    Done after the wheel is installed: seen earlier, this environment's own (editable) Sealcheck
    of the same version would make pip skip the wheel as already installed."""
    ours = dict.fromkeys([sysconfig.get_path("purelib"), sysconfig.get_path("platlib")])
    (site / "zz_sealcheck_dependencies.pth").write_text("".join(f"{path}\n" for path in ours))


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
def wheel(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """The wheel built from a copy of the checkout, installed into a fresh virtualenv: the
    wheel, the virtualenv's interpreter and its site-packages."""
    base = tmp_path_factory.mktemp("installed")
    source = base / "src"
    copy_checkout(source)
    python, site = make_venv(base / "venv")
    dist = base / "dist"
    build = ["wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", str(dist)]
    run([str(python), "-m", "pip", *build, str(source)], cwd=base, env=clean_env())
    (built,) = dist.glob("sealcheck-*.whl")
    install = ["install", "--no-deps", "--no-index", "--force-reinstall", str(built)]
    run([str(python), "-m", "pip", *install], base)
    reach_dependencies(site)
    return built, python, site


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


def test_a_project_with_every_old_name_runs_pytest_with_sealcheck(
    wheel: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    _, python, site = wheel
    project = user_project(tmp_path / "my-project")
    origins_file = tmp_path / "origins.json"
    env = clean_env() | {"ORIGINS_JSON": str(origins_file)}
    # `python -m pytest` puts the project first on sys.path before the plugins load: the
    # situation in which an installed `pipeline` used to be shadowed and the plugin failed
    output = run(
        [str(python), "-m", "pytest", "-p", "no:cacheprovider", "-q", "test_my_job.py"],
        cwd=project,
        env=env,
    )
    assert "3 passed" in output, output
    origins = json.loads(origins_file.read_text())
    for name, where in origins.items():
        home = project if not name.startswith("sealcheck") else site
        assert Path(where).is_relative_to(home), f"{name} came from {where}, not {home}"
    # the wheel's copies, not links back into a checkout
    assert not (site / "sealcheck" / "harness").is_symlink()
    # the command line too, started from the project (its packages first on sys.path)
    version = run([str(python), "-m", "sealcheck", "--version"], cwd=project, env=env)
    assert version.startswith("sealcheck "), version
