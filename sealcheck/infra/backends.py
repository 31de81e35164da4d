"""The registry of backends: where a test can run. Each entry is the backend's class, imported
when asked for (the containers backend needs the Docker SDK); its ``capabilities`` say which
optional faults and stores it supports (:data:`sealcheck.core.capabilities.CAPABILITIES`), its
``roles`` which nodes it runs itself (:class:`sealcheck.core.roles.Role`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from sealcheck.core.roles import Role
from sealcheck.infra.node import Backend

NAMES = ("local", "containers")
#: Makes a backend for one run: ``(brokers, work directory, run id) -> Backend``.
BackendFactory = Callable[[int, Path, str], Backend]


def backend_class(name: str) -> type[Backend]:
    """The class of backend ``name``; a ValueError naming the known ones otherwise."""
    if name == "local":
        from sealcheck.infra.local import LocalBackend

        return LocalBackend
    if name == "containers":
        from sealcheck.infra.containers.backend import ContainersBackend

        return ContainersBackend
    raise ValueError(f"unknown backend {name!r}; known: {', '.join(NAMES)}")


def backend_factory(name: str) -> BackendFactory:
    """A factory of backend ``name`` (the class itself: every backend is built the same way)."""
    return backend_class(name)


def capabilities(name: str) -> frozenset[str]:
    """What backend ``name`` offers beyond brokers and incarnations."""
    return backend_class(name).capabilities


def roles(name: str, brokers: int) -> Mapping[str, Role]:
    """The roles of the nodes backend ``name`` runs itself with ``brokers`` brokers."""
    return backend_class(name).roles(brokers)
