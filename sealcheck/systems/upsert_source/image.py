"""``sealcheck-upsert-source:<hash>``: the base image plus the pipeline's Python dependencies,
installed from wheels prepared on the host (``pip wheel``, using the host's pip cache and
PyPI, kept in the user's cache), the pipeline's source (the ``sealcheck_upsert_source`` package
and the dependency-free failpoint helper ``sealcheck_failpoint`` whose variable it reads,
copied from where they are installed, a checkout or site-packages: it imports nothing else of
Sealcheck) and the Spark connector jars, which ``SEALCHECK_SPARK_JARS`` names. Nothing is
fetched during the image build itself (``pip install --no-index``).
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path, PurePosixPath
from types import ModuleType

import sealcheck_failpoint
import sealcheck_upsert_source
from sealcheck.infra.containers.images import _build_context, base_image
from sealcheck.infra.jars import jars_dir, pom_property, setup_jars
from sealcheck.infra.paths import cache_dir

#: What the pipeline imports at run time (a subset of the project's dependencies) and the
#: libraries PySpark's Connect client loads: each pinned to the version installed on the host
#: (:func:`runtime_requirements`), so the image runs what the local backend runs. Unpinned, a
#: rebuild once pulled pandas 3, which PySpark 4.0 does not support (pyproject pins ``<3``).
RUNTIME = (
    "pyspark[connect]",
    "confluent-kafka",
    "orjson",
    "tenacity",
    "psycopg[binary]",
    "pyarrow",
    "pandas",
    "numpy",
    "grpcio",
    "grpcio-status",
    "googleapis-common-protos",
    "protobuf",
)
#: The packages copied into the image, from where they are installed.
SOURCES: tuple[ModuleType, ...] = (sealcheck_upsert_source, sealcheck_failpoint)
JARS_IN_IMAGE = "/opt/sealcheck/jars"

_DOCKERFILE = """\
FROM {base}
COPY wheels/ /tmp/wheels/
RUN python3 -m venv /opt/venv \\
 && /opt/venv/bin/pip install -q --no-index --find-links /tmp/wheels {requirements} \\
 && rm -rf /tmp/wheels
COPY src/ /opt/sealcheck/src/
COPY jars/ {jars}/
ENV PYTHONPATH=/opt/sealcheck/src PATH=/opt/venv/bin:/usr/local/bin:/usr/bin:/bin \\
    PYSPARK_PYTHON=/opt/venv/bin/python PYTHONUNBUFFERED=1 SEALCHECK_SPARK_JARS={jars}
WORKDIR /opt/sealcheck/src
ENTRYPOINT ["python", "-m", "sealcheck_upsert_source"]
"""


def runtime_requirements() -> list[str]:
    """:data:`RUNTIME`, each pinned (``==``) to the version installed here (``pip install -e
    .`` put them there, within pyproject's bounds)."""
    from importlib.metadata import PackageNotFoundError, version

    pinned = []
    for spec in RUNTIME:
        name = spec.split("[")[0]
        try:
            pinned.append(f"{spec}=={version(name)}")
        except PackageNotFoundError as exc:
            raise RuntimeError(
                f"{name!r} is not installed here, so the pipeline image cannot pin it; "
                "run `pip install -e .` (or `make setup`) first"
            ) from exc
    return pinned


def package_sources(packages: tuple[ModuleType, ...]) -> dict[str, Path]:
    """Each ``.py`` file of ``packages``, found from the installed package (its
    ``__file__``: a checkout or site-packages alike), keyed by its path from the package's
    parent (``sealcheck_upsert_source/loop.py``), sorted: what an image's ``src/`` holds and
    its tag hashes."""
    found: dict[str, Path] = {}
    for package in packages:
        if package.__file__ is None:
            raise RuntimeError(f"{package.__name__} has no files to copy into an image")
        home = Path(package.__file__).resolve().parent
        for path in home.rglob("*.py"):
            if path.is_file():
                found[path.relative_to(home.parent).as_posix()] = path
    return dict(sorted(found.items(), key=lambda item: PurePosixPath(item[0]).parts))


def _wheels(directory: Path) -> list[str]:
    """Download or build the runtime wheels into ``directory``; their file names."""
    cmd = [sys.executable, "-m", "pip", "wheel", "-q", "-w", str(directory)]
    cmd += runtime_requirements()
    subprocess.run(cmd, check=True)
    return sorted(p.name for p in directory.glob("*.whl"))


def copy_sources(sources: dict[str, Path], into: Path) -> None:
    """Copy :func:`package_sources`' files under ``into`` at their package paths."""
    for name, path in sources.items():
        dst = into / name
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, dst)


def upsert_source_image() -> str:
    """Build (if needed) and return ``sealcheck-upsert-source:<hash>``."""
    base = base_image()
    setup_jars()
    spark_jars = jars_dir() / f"spark-kafka-{pom_property('spark.version')}"
    wheel_dir = cache_dir() / "pipeline-wheels"
    requirements = " ".join(f"'{r}'" for r in runtime_requirements())
    dockerfile = _DOCKERFILE.format(base=base, requirements=requirements, jars=JARS_IN_IMAGE)
    # The tag hashes the requirements, not the wheels: pip (and PyPI) is consulted only when
    # the image has to be built.
    digest = hashlib.sha256(dockerfile.encode())
    sources = package_sources(SOURCES)
    for name, path in sources.items():
        digest.update(name.encode() + path.read_bytes())
    for jar in sorted(spark_jars.glob("*.jar")):
        digest.update(jar.name.encode())
    tag = f"sealcheck-upsert-source:{digest.hexdigest()[:12]}"

    def fill(ctx: Path) -> None:
        shutil.rmtree(wheel_dir, ignore_errors=True)
        wheel_dir.mkdir(parents=True)
        _wheels(wheel_dir)
        shutil.copytree(wheel_dir, ctx / "wheels")
        copy_sources(sources, ctx / "src")
        shutil.copytree(spark_jars, ctx / "jars", ignore=shutil.ignore_patterns(".complete"))

    return _build_context(tag, dockerfile, fill)


if __name__ == "__main__":  # pragma: no cover - `python -m sealcheck.systems.upsert_source.image`
    print(upsert_source_image())
