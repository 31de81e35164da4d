"""A :class:`~sealcheck.systems.job.Job`'s container image for ``--backend containers``: the one
it names (:attr:`~sealcheck.systems.job.Job.image`), or ``sealcheck-job-<name>:<hash>`` built
here from the project the descriptor is installed from — the pipeline image (Debian, Java 17,
Python 3.11 with PySpark, confluent-kafka, psycopg, pyarrow, pandas; the failpoint helper)
plus every top-level package and module of the installed distribution that holds the
descriptor's module (the job beside its descriptor, as a wheel installs them), copied from
where they are installed. Nothing is fetched during the build; other dependencies of the job
are not installed (name an image of your own for those).

Inside, the job's command runs as it is but for its program: ``sys.executable`` (the host's
Python) is the image's ``python`` (:func:`in_image`). The job's directory and Sealcheck's jar
cache are bind-mounted at their host paths, so the paths a descriptor gives (``run.dir``,
``sealcheck.delta_jars()``) hold inside too.
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
import sys
from collections.abc import Sequence
from importlib.metadata import packages_distributions
from pathlib import Path, PurePosixPath

from sealcheck.systems.api import SystemUnderTest
from sealcheck.systems.job_calls import DescriptorError

_DOCKERFILE = """\
FROM {base}
COPY src/ /opt/sealcheck/src/
ENTRYPOINT ["python"]
"""


def in_image(program: Sequence[str]) -> tuple[str, ...]:
    """A command's program as the image runs it: the host's Python (``sys.executable``, or a
    path to the same file) is the image's ``python``; anything else as it is."""
    if not program:
        return ()
    first = program[0]
    try:
        same = Path(first).resolve() == Path(sys.executable).resolve()
    except OSError:
        same = False
    return ("python",) if first == sys.executable or same else (first,)


def project_sources(job: SystemUnderTest) -> dict[str, Path]:
    """Every file of the top-level packages and modules of the installed distribution that
    holds ``job``'s module, keyed by its path in the image's ``src/`` (sorted); a
    :class:`DescriptorError` when no installed distribution holds it."""
    module = type(job).__module__
    owners = packages_distributions()
    dists = owners.get(module.partition(".")[0], [])
    if not dists:
        raise DescriptorError(
            f"{type(job).__name__} comes from {module!r}, which no installed project provides, "
            "so Sealcheck cannot build its image for --backend containers: install the project "
            '(pip install .), or set image = "my-job:1" to an image built beforehand'
        )
    found: dict[str, Path] = {}
    for name in sorted(n for n, ds in owners.items() if dists[0] in ds):
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None or not Path(spec.origin).is_file():
            continue  # a namespace package, or a name with nothing of its own installed
        origin = Path(spec.origin).resolve()
        if not spec.submodule_search_locations:
            found[origin.name] = origin
            continue
        for path in origin.parent.rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts:
                found[path.relative_to(origin.parent.parent).as_posix()] = path
    own = module.replace(".", "/")
    if f"{own}.py" not in found and f"{own}/__init__.py" not in found:  # a namespace package
        raise DescriptorError(
            f"{type(job).__name__} comes from {module!r}, whose files Sealcheck cannot find in "
            f"the installed project {dists[0]!r} (a namespace package?), so it cannot build its "
            'image for --backend containers: set image = "my-job:1" to an image built beforehand'
        )
    return dict(sorted(found.items(), key=lambda item: PurePosixPath(item[0]).parts))


def project_image(job: SystemUnderTest) -> str:
    """Build (if needed) and return ``sealcheck-job-<name>:<hash>`` for ``job``: the pipeline
    image (built first if needed) plus :func:`project_sources`; the hash covers every file."""
    from sealcheck.infra.containers.images import _build_context
    from sealcheck.systems.upsert_source.image import copy_sources, upsert_source_image

    sources = project_sources(job)
    base = upsert_source_image()
    dockerfile = _DOCKERFILE.format(base=base)
    digest = hashlib.sha256(dockerfile.encode())
    for name, path in sources.items():
        digest.update(name.encode() + path.read_bytes())
    slug = re.sub(r"[^a-z0-9_.-]+", "-", (job.name or type(job).__name__).lower()).strip("-.")
    tag = f"sealcheck-job-{slug or 'job'}:{digest.hexdigest()[:12]}"
    return _build_context(tag, dockerfile, lambda ctx: copy_sources(sources, ctx / "src"))
