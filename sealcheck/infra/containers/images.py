"""Offline images, built locally: no container registry is needed.

* ``sealcheck-base:<hash>``: debootstrapped Debian bookworm with a headless JRE 17 and
  python3, made by ``base-image.sh`` (package data: ``sealcheck/infra/resources/scripts/``)
  and ``docker import``; its rootfs tree is kept in the user's cache;
* ``sealcheck-kafka:<hash>``: the base plus the Kafka jars from the Maven cache;
* ``sealcheck-postgres:<hash>``: the base (which carries Debian's PostgreSQL) plus an
  entrypoint that initialises and runs one cluster.

Tags are content hashes of the inputs, so an image is rebuilt only when they change.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from importlib import resources
from pathlib import Path

from sealcheck.infra.jars import jars_dir, pom_property, setup_jars
from sealcheck.infra.paths import cache_dir, scripts_dir


class EngineUnavailableError(RuntimeError):
    """No Docker engine answers and none could be started; the message says why."""


def ensure_engine() -> None:
    """Make sure a Docker engine runs (installing/starting it as root if needed)."""
    script = scripts_dir() / "docker-engine.sh"
    out = subprocess.run(["bash", str(script)], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        reason = (out.stderr or out.stdout).strip().splitlines()
        raise EngineUnavailableError(reason[-1] if reason else f"{script} exited {out.returncode}")


def _image_exists(tag: str) -> bool:
    out = subprocess.run(["docker", "image", "inspect", tag], capture_output=True, check=False)
    return out.returncode == 0


def base_image() -> str:
    """Build (if needed) and return the base image tag (the script's hash: it is the input).

    The script keeps its debootstrapped rootfs under :func:`~sealcheck.infra.paths.cache_dir`,
    which it is handed, so Python and the script agree on one cache.
    """
    ensure_engine()
    script = scripts_dir() / "base-image.sh"
    env = os.environ | {"SEALCHECK_CACHE": str(cache_dir())}
    out = subprocess.run(
        ["bash", str(script)], stdout=subprocess.PIPE, text=True, check=False, env=env
    )
    if out.returncode != 0:
        raise RuntimeError(f"building the base image failed (exit {out.returncode}); see above")
    return out.stdout.strip().splitlines()[-1]


_KAFKA_DOCKERFILE = """\
FROM {base}
COPY libs/ /opt/kafka/libs/
COPY kafka-log4j2.properties kafka-entrypoint.sh /opt/sealcheck/
RUN chmod +x /opt/sealcheck/kafka-entrypoint.sh
EXPOSE 9092 9093
ENTRYPOINT ["/opt/sealcheck/kafka-entrypoint.sh"]
"""


def kafka_image() -> str:
    """Build (if needed) and return ``sealcheck-kafka:<hash>``."""
    base = base_image()
    setup_jars()
    libs = jars_dir() / f"kafka-{pom_property('kafka.version')}"
    res = resources.files("sealcheck.infra") / "resources"
    files = {
        "kafka-log4j2.properties": (res / "kafka-log4j2.properties").read_bytes(),
        "kafka-entrypoint.sh": (res / "kafka-entrypoint.sh").read_bytes(),
    }
    dockerfile = _KAFKA_DOCKERFILE.format(base=base)
    digest = hashlib.sha256(dockerfile.encode())
    for name in sorted(files):
        digest.update(name.encode() + files[name])
    for jar in sorted(libs.glob("*.jar")):
        digest.update(f"{jar.name}:{jar.stat().st_size}".encode())
    tag = f"sealcheck-kafka:{digest.hexdigest()[:12]}"

    def fill(ctx: Path) -> None:
        for name, data in files.items():
            (ctx / name).write_bytes(data)
        shutil.copytree(libs, ctx / "libs", ignore=shutil.ignore_patterns(".complete"))

    return _build_context(tag, dockerfile, fill)


_POSTGRES_DOCKERFILE = """\
FROM {base}
COPY postgres-entrypoint.sh /opt/sealcheck/
RUN chmod +x /opt/sealcheck/postgres-entrypoint.sh
EXPOSE 5432
ENTRYPOINT ["/opt/sealcheck/postgres-entrypoint.sh"]
"""


def _build(tag: str, dockerfile: str, files: dict[str, bytes]) -> str:
    def fill(ctx: Path) -> None:
        for name, data in files.items():
            (ctx / name).write_bytes(data)

    return _build_context(tag, dockerfile, fill)


def _build_context(tag: str, dockerfile: str, fill: Callable[[Path], None]) -> str:
    """Build ``tag`` from ``dockerfile`` and a context ``fill`` writes (unless it exists)."""
    if _image_exists(tag):
        return tag
    with tempfile.TemporaryDirectory(prefix="sealcheck-image-") as ctx_name:
        ctx = Path(ctx_name)
        (ctx / "Dockerfile").write_text(dockerfile)
        fill(ctx)
        import docker

        client = docker.from_env()
        try:
            client.images.build(path=str(ctx), tag=tag, rm=True, forcerm=True, pull=False)
        finally:
            client.close()
    return tag


def postgres_image() -> str:
    """Build (if needed) and return ``sealcheck-postgres:<hash>``."""
    base = base_image()
    res = resources.files("sealcheck.infra") / "resources"
    files = {"postgres-entrypoint.sh": (res / "postgres-entrypoint.sh").read_bytes()}
    dockerfile = _POSTGRES_DOCKERFILE.format(base=base)
    digest = hashlib.sha256(dockerfile.encode() + files["postgres-entrypoint.sh"])
    return _build(f"sealcheck-postgres:{digest.hexdigest()[:12]}", dockerfile, files)
