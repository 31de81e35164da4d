"""A :class:`~sealcheck.Job` under ``--backend containers`` (issue 51): its image is the one it
names or one built from the installed project holding its descriptor (every file of that
project's top-level packages and modules, nothing of other projects), and each incarnation is
that image's container running the job's own command — the host's Python as the image's, its
directory and the jar cache at their host paths, the run told it runs in containers."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from sealcheck.systems.api import Settings
from sealcheck.systems.delta_streaming import DeltaStreaming
from sealcheck.systems.job_image import in_image, project_sources

JOB_MODULE = """
import sys
from dataclasses import dataclass
from sealcheck import DeltaOutput, Job

@dataclass(frozen=True)
class ShopJob(Job):
    name = "shop-job"

    def command(self, run):
        return [sys.executable, "-m", "shop_job", "--dir", str(run.dir), "--on", run.backend]

    def output(self, run):
        return DeltaOutput(run.dir / "checkpoint", run.dir / "orders", key="id")

@dataclass(frozen=True)
class Imaged(ShopJob):
    image = "shop-job:7"
"""


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Project ``shop-job`` installed as a wheel installs it: a package ``shop_job`` (with a
    data file and a stale bytecode cache), a descriptor module ``shop_sealcheck``, a
    ``RECORD`` naming them; and another project's package beside it."""
    site = tmp_path / "site"
    (site / "shop_job" / "__pycache__").mkdir(parents=True)
    (site / "shop_job" / "__init__.py").write_text("")
    (site / "shop_job" / "schema.avsc").write_text("{}")
    (site / "shop_job" / "__pycache__" / "x.pyc").write_bytes(b"\0")
    (site / "shop_sealcheck.py").write_text(JOB_MODULE)
    (site / "other").mkdir()
    (site / "other" / "__init__.py").write_text("")
    info = site / "shop_job-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: shop-job\nVersion: 1.0\n")
    (info / "top_level.txt").write_text("shop_job\nshop_sealcheck\n")
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    yield site
    for name in [m for m in sys.modules if m.startswith(("shop_", "other"))]:
        del sys.modules[name]


def test_the_image_holds_the_installed_project_and_nothing_else(installed: Path) -> None:
    module = importlib.import_module("shop_sealcheck")
    sources = project_sources(module.ShopJob())
    assert sorted(sources) == ["shop_job/__init__.py", "shop_job/schema.avsc", "shop_sealcheck.py"]
    assert sources["shop_sealcheck.py"] == (installed / "shop_sealcheck.py").resolve()
    assert module.ShopJob().builds_image() and not module.Imaged().builds_image()
    assert module.Imaged().container_image() == "shop-job:7"
    assert not DeltaStreaming().builds_image()  # Sealcheck's own job has its own image


def test_a_descriptor_no_installed_project_holds_is_refused_in_one_line(tmp_path: Path) -> None:
    from sealcheck.systems.job_calls import DescriptorError

    class Loose(DeltaStreaming):
        pass

    Loose.__module__ = "not_installed_anywhere"
    with pytest.raises(DescriptorError) as info:
        project_sources(Loose())
    message = str(info.value)
    assert "\n" not in message and "'not_installed_anywhere'" in message
    assert "pip install ." in message and 'image = "my-job:1"' in message


def test_the_hosts_python_is_the_images_python() -> None:
    assert in_image([sys.executable]) == ("python",)
    assert in_image(["/usr/bin/java"]) == ("/usr/bin/java",)
    assert in_image([]) == ()


class _Containers:
    """Just enough of the containers backend to lay out a deployment."""

    bootstrap = "172.18.0.2:9092"
    name, runs_images = "containers", True

    def address(self, name: str) -> str:
        return f"net-{name}"

    def service(self, launch: object, name: str, log_path: Path) -> object:
        return launch


def test_an_incarnation_in_containers_runs_the_jobs_command_in_its_image(
    installed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sealcheck.systems.job

    jars = tmp_path / "jars"
    jars.mkdir()
    monkeypatch.setattr(sealcheck.systems.job, "jars_dir", lambda: jars)
    module = importlib.import_module("shop_sealcheck")
    settings = Settings("t", 100, spark="cluster")
    dep = module.ShopJob().deploy(_Containers(), settings, tmp_path / "work", tmp_path)
    launch = dep.launch(0)
    assert launch.entrypoint == ("python",) and launch.args[:2] == ("-m", "shop_job")
    assert launch.args[-2:] == ("--on", "containers")  # JobRun.backend
    assert launch.image == dep.job.container_image  # built before the run starts
    assert launch.shared == (dep.store, str(jars))  # its directory and the jar cache
    assert dep.cluster is not None and dep.cluster.image == launch.image  # workers: its image
    assert dep.cluster.shared == launch.shared  # executors read the jars at the driver's paths
    delta = DeltaStreaming().deploy(_Containers(), Settings("t", 100), tmp_path / "w2", tmp_path)  # type: ignore[arg-type]
    assert "SPARK_LOCAL_IP" not in delta.launch(0).env  # an address of its own network


def test_a_descriptor_in_a_namespace_package_is_refused_not_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sealcheck.systems.job_calls import DescriptorError

    site = tmp_path / "site"
    (site / "acme" / "jobs").mkdir(parents=True)  # acme: a namespace package (no __init__)
    (site / "acme" / "jobs" / "__init__.py").write_text("")
    (site / "acme" / "jobs" / "shop.py").write_text(JOB_MODULE)
    info = site / "acme_jobs-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-jobs\nVersion: 1.0\n")
    (info / "top_level.txt").write_text("acme\n")
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    try:
        module = importlib.import_module("acme.jobs.shop")
        with pytest.raises(DescriptorError, match="namespace package") as info_:
            project_sources(module.ShopJob())
        assert "\n" not in str(info_.value) and 'image = "my-job:1"' in str(info_.value)
    finally:
        for name in [m for m in sys.modules if m.startswith("acme")]:
            del sys.modules[name]
