"""Where Sealcheck's own files live: its package data and the user's cache.

The JVM poms and the shell scripts Sealcheck runs are package data of ``sealcheck.infra``
(``sealcheck/infra/resources/``), found beside this module: the same files in a checkout, an
editable install and a wheel. Nothing here assumes a git checkout.
"""

from __future__ import annotations

import os
from pathlib import Path

#: ``sealcheck/infra/resources/``: the poms (``jvm/``), the host's scripts (``scripts/``) and
#: the images' entrypoints, wherever the package is installed.
RESOURCES = Path(__file__).resolve().parent / "resources"


def cache_dir() -> Path:
    """The user's cache for jars, rootfs trees and images' inputs (absolute).

    ``$SEALCHECK_CACHE`` if set, else ``$XDG_CACHE_HOME/sealcheck`` (when that is an absolute
    path, as the XDG spec asks), else ``~/.cache/sealcheck``.
    """
    explicit = os.environ.get("SEALCHECK_CACHE")
    if explicit:
        return Path(explicit).expanduser().resolve()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".cache"
    return (base / "sealcheck").resolve()


def jvm_dir() -> Path:
    """The Maven project (``pom.xml`` and one module per folder) that copies the jars."""
    return RESOURCES / "jvm"


def scripts_dir() -> Path:
    """The shell scripts Sealcheck runs on the host: the Docker engine, the base image, FUSE."""
    return RESOURCES / "scripts"
