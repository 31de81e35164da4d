"""Where Sealcheck's own files live: the repository root, the JVM poms and the cache."""

from __future__ import annotations

import os
from pathlib import Path

#: The repository root (``sealcheck/infra/paths.py``; the project is installed editable from a
#: checkout).
REPO_ROOT = Path(__file__).resolve().parents[2]


def cache_dir() -> Path:
    """The ignored cache directory for jars, rootfs trees and images' inputs.

    ``SEALCHECK_CACHE`` overrides the default ``<repo>/.cache``.
    """
    return Path(os.environ.get("SEALCHECK_CACHE", REPO_ROOT / ".cache")).resolve()


def scripts_dir() -> Path:
    """The shell scripts that manage the Docker engine and build images."""
    return REPO_ROOT / "scripts"
