"""The registry of systems under test: adding one is one package plus one line in
:data:`SYSTEMS` (``docs/contributing.md``)."""

from __future__ import annotations

from collections.abc import Callable

from sealcheck.rundir.names import OLD_SYSTEMS
from sealcheck.systems.api import SystemUnderTest
from sealcheck.systems.delta_streaming import DeltaStreaming
from sealcheck.systems.upsert_source import UpsertSource

SYSTEMS: dict[str, Callable[[], SystemUnderTest]] = {
    "upsert-source": UpsertSource,
    "delta-streaming": DeltaStreaming,
}


def system(name: str) -> SystemUnderTest:
    """The descriptor registered as ``name`` (or the old name of one, e.g. ``pipeline``); a
    ValueError naming the known ones otherwise."""
    name = OLD_SYSTEMS.get(name, name)
    if name not in SYSTEMS:
        raise ValueError(f"unknown system under test {name!r}; known: {', '.join(SYSTEMS)}")
    return SYSTEMS[name]()
