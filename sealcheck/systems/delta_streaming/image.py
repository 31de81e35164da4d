"""``sealcheck-delta-streaming:<hash>``: the pipeline image (its Python, PySpark and the Kafka
connector's jars) plus Delta Lake's jars, the ``sealcheck_delta_streaming`` package and the
failpoint helper ``sealcheck_failpoint`` it uses (copied from where they are installed, a
checkout or site-packages), for the containers backend. The job's
directory (checkpoint and tables) is not in the image: the backend bind-mounts it at the same
path as on the host (capability ``host-directory``), where the harness reads it through
delta-rs. Nothing is fetched during the build.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from types import ModuleType

import sealcheck_delta_streaming
import sealcheck_failpoint
from sealcheck.infra.containers.images import _build_context
from sealcheck.infra.jars import delta_jars
from sealcheck.systems.upsert_source.image import (
    JARS_IN_IMAGE,
    copy_sources,
    package_sources,
    upsert_source_image,
)

#: Delta's jars inside the image (the Kafka connector's stay at ``JARS_IN_IMAGE``).
DELTA_JARS_IN_IMAGE = "/opt/sealcheck/delta-jars"
#: The packages copied into the image, from where they are installed.
SOURCES: tuple[ModuleType, ...] = (sealcheck_delta_streaming, sealcheck_failpoint)

_DOCKERFILE = """\
FROM {base}
COPY src/ /opt/sealcheck/src/
COPY jars/ {delta}/
ENV SEALCHECK_SPARK_JARS={kafka}:{delta}
ENTRYPOINT ["python", "-m", "sealcheck_delta_streaming"]
"""


def delta_streaming_image() -> str:
    """Build (if needed) and return ``sealcheck-delta-streaming:<hash>`` (on top of the pipeline
    image, built first if needed)."""
    base = upsert_source_image()
    jars = delta_jars()
    dockerfile = _DOCKERFILE.format(base=base, kafka=JARS_IN_IMAGE, delta=DELTA_JARS_IN_IMAGE)
    digest = hashlib.sha256(dockerfile.encode())
    sources = package_sources(SOURCES)
    for name, path in sources.items():
        digest.update(name.encode() + path.read_bytes())
    for jar in jars:
        digest.update(jar.name.encode())
    tag = f"sealcheck-delta-streaming:{digest.hexdigest()[:12]}"

    def fill(ctx: Path) -> None:
        copy_sources(sources, ctx / "src")
        (ctx / "jars").mkdir()
        for jar in jars:
            shutil.copy2(jar, ctx / "jars" / jar.name)

    return _build_context(tag, dockerfile, fill)


if __name__ == "__main__":  # pragma: no cover - `python -m sealcheck.systems.delta_streaming.image`
    print(delta_streaming_image())
