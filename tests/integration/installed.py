"""Sealcheck as a user installs it: its wheel and the worked examples' (``examples/user_job``,
``examples/orders``) built from a copy of the checkout, every dependency put in a local
wheelhouse, and both installed from it into a fresh virtualenv with no index — once per test
session, for the collision test and the examples' acceptance tests alike.

The wheelhouse is built by ``pip wheel`` with the versions the running environment has pinned
as constraints (PyPI, through pip's cache: a fresh machine downloads them once); the install
reads nothing but the wheelhouse.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.product import ROOT, tracked


def run(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    """Run a command; its output, or a failure that shows it."""
    done = subprocess.run(
        args, cwd=cwd, env=env, capture_output=True, text=True, timeout=900, check=False
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


def user_env(bin_dir: Path) -> dict[str, str]:
    """A user's shell with the virtualenv of ``bin_dir`` activated."""
    env = clean_env()
    path = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    return env | {"PATH": path, "VIRTUAL_ENV": str(bin_dir.parent)}


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


def freeze() -> str:
    """The versions this environment runs, as pip constraints (editable projects left out)."""
    out = run([sys.executable, "-m", "pip", "freeze", "--exclude-editable"], cwd=ROOT)
    return "".join(line + "\n" for line in out.splitlines() if "==" in line)


@dataclass(frozen=True)
class Installed:
    """The fresh virtualenv and what went into it."""

    #: the virtualenv's ``bin`` folder (``python``, ``sealcheck``, ``pytest``)
    bin: Path
    #: its site-packages
    site: Path
    #: Sealcheck's wheel and the examples' (``user_job``, ``orders``)
    wheel: Path
    example_wheel: Path
    orders_wheel: Path

    @property
    def python(self) -> Path:
        """The virtualenv's interpreter."""
        return self.bin / "python"


def install(base: Path) -> Installed:
    """Build both wheels and the wheelhouse under ``base``, and install them into
    ``base/venv``."""
    copy_checkout(base / "src")
    dist, house = base / "dist", base / "wheelhouse"
    # a builder seeded offline by virtualenv: a setuptools new enough for pyproject.toml
    run([sys.executable, "-m", "virtualenv", "--no-periodic-update", str(base / "builder")], base)
    builder = str(base / "builder" / "bin" / "python")
    build = [builder, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(dist)]
    run([*build, str(base / "src")], base, clean_env())
    for example in ("user_job", "orders"):
        run([*build, str(base / "src" / "examples" / example)], base, clean_env())
    (wheel,) = dist.glob("sealcheck-*.whl")
    (example,) = dist.glob("user_job-*.whl")
    (orders,) = dist.glob("orders_job-*.whl")
    (base / "constraints.txt").write_text(freeze())
    fill = [builder, "-m", "pip", "wheel", "-q", "-w", str(house), "-c"]
    wheels = [str(wheel), f"{example}[test]", f"{orders}[test]"]
    run([*fill, str(base / "constraints.txt"), *wheels], base, clean_env())
    run([sys.executable, "-m", "venv", str(base / "venv")], base, clean_env())
    python = base / "venv" / "bin" / "python"
    pip = [str(python), "-m", "pip", "install", "-q", "--no-index", "--find-links", str(house)]
    run([*pip, "sealcheck", "user-job[test]", "orders-job[test]"], base, clean_env())
    where = "import sysconfig; print(sysconfig.get_path('purelib'))"
    site = Path(run([str(python), "-c", where], base).strip().splitlines()[-1])
    return Installed(base / "venv" / "bin", site, wheel, example, orders)


def example_suite(
    venv: Path,
    example: Path,
    where: Path,
    select: str,
    passed: int,
    marks: str = "not containers",  # PostgreSQL or the job in containers: tests/containers/
) -> tuple[Path, str]:
    """An example's own suite, from a copy of its project, run as its user runs it (two
    workers; by default the tests that need no Docker engine: ``-m marks``), its tests chosen
    by ``-k select``: the archive of its runs and pytest's output (its JUnit XML beside the
    archive)."""
    project = where / example.name
    shutil.copytree(example, project)
    runs = where / "runs"
    xml = f"--junitxml={where / 'chaos.xml'}"
    done = subprocess.run(
        [
            str(venv / "pytest"),
            "-n",
            "2",
            "-p",
            "no:cacheprovider",
            "-m",
            marks,
            "-k",
            select,
            "--sealcheck-runs",
            str(runs),
            xml,
        ],
        cwd=project,
        env=user_env(venv),
        capture_output=True,
        text=True,
        timeout=1500,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-6000:]
    assert f"{passed} passed" in output, output[-3000:]
    return runs, output
