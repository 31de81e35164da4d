"""Naming systems under test, and finding one by its name in every process of a run.

A system is named in one of three ways, resolved in this order by :func:`system` (the one
place every path that builds a run goes through: ``sealcheck run``, ``--replay``, ``shrink``,
``suite``, ``selftest``, the pytest plugin's child runs):

1. a built-in name (:data:`SYSTEMS`; old names such as ``pipeline`` are still read);
2. a name a user's package declares in the entry-point group :data:`GROUP`
   (``[project.entry-points."sealcheck.systems"] my-job = "my_pkg.system:MyJob"``);
3. ``package.module:Factory`` — any importable callable.

A factory is called with the system's options (JSON values: its dataclass fields,
:meth:`~sealcheck.systems.api.SystemUnderTest.options`), which a run saves in ``test.json``
beside the name (``system_options``), so a system built in Python is rebuilt anywhere by
:func:`reference` and :func:`system`.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Mapping
from importlib.metadata import entry_points
from typing import Any

from sealcheck.rundir.names import OLD_SYSTEMS
from sealcheck.systems.api import SystemUnderTest
from sealcheck.systems.delta_streaming import DeltaStreaming, DeltaTables
from sealcheck.systems.upsert_source import UpsertSource

#: the built-in systems under test
SYSTEMS: dict[str, Callable[[], SystemUnderTest]] = {
    "upsert-source": UpsertSource,
    "delta-streaming": DeltaStreaming,
    "delta-streaming-tables": DeltaTables,
}
#: the entry-point group a user's package registers its systems in
GROUP = "sealcheck.systems"

HOW = (
    f'register it in your package\'s pyproject.toml ([project.entry-points."{GROUP}"] '
    'my-job = "my_pkg.system:MyJob"), or name it as package.module:Factory'
)


class SystemNotFound(ValueError):
    """A name that resolves to no system under test; the message says what was tried and how
    to register one."""


def registered() -> dict[str, str]:
    """Every registered name: the built-in ones and the entry points of installed packages
    (name -> where it comes from)."""
    out = {n: "built in" for n in SYSTEMS}
    for ep in entry_points(group=GROUP):
        out.setdefault(ep.name, ep.value)
    return out


def _factory(name: str) -> Callable[..., Any]:
    """The factory ``name`` names (:class:`SystemNotFound` saying what was tried)."""
    name = OLD_SYSTEMS.get(name, name)
    if name in SYSTEMS:
        return SYSTEMS[name]
    found = [ep for ep in entry_points(group=GROUP) if ep.name == name]
    where = found[0].value if found else name
    if ":" not in where:
        known = ", ".join(registered())
        raise SystemNotFound(
            f"system {name!r} is unknown: not a built-in one, no installed package registers "
            f"it (entry-point group {GROUP!r}), and not a package.module:Factory reference; "
            f"known: {known}; {HOW}"
        )
    module, _, attr = where.partition(":")
    try:
        obj: Any = importlib.import_module(module)
    except ImportError as exc:
        raise SystemNotFound(
            f"system {name!r}: cannot import {module} ({type(exc).__name__}: {exc}); is its "
            "package installed in this environment, or its folder on PYTHONPATH?"
        ) from None
    for part in attr.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            raise SystemNotFound(f"system {name!r}: {module} has no {attr}; {HOW}")
    if not callable(obj):
        raise SystemNotFound(f"system {name!r}: {where} is not callable; {HOW}")
    return obj  # type: ignore[no-any-return]


def system(name: str, options: Mapping[str, Any] | None = None) -> SystemUnderTest:
    """The system under test ``name`` names, built with ``options``; :class:`SystemNotFound`
    (one line: what was tried, how to register) when it names none, or its factory refuses
    the options or builds something that is not a system."""
    factory = _factory(name)
    try:
        built = factory(**dict(options or {}))
    except (TypeError, ValueError) as exc:  # an option it does not take, or a value it refuses
        raise SystemNotFound(
            f"system {name!r} cannot be built with the options {dict(options or {})}: {exc}"
        ) from None
    if not isinstance(built, SystemUnderTest):
        raise SystemNotFound(
            f"system {name!r} built a {type(built).__name__}, not a system under test: "
            "subclass sealcheck.Job (or sealcheck.systems.SystemUnderTest)"
        )
    return built


def reference(sut: SystemUnderTest) -> tuple[str, dict[str, Any]]:
    """The name and options that rebuild ``sut`` in another process: a built-in system's
    name, else ``module:Class`` of its class. :class:`SystemNotFound` when that would not
    rebuild it (a class defined in ``__main__`` or in a function, options that are not JSON
    values, or options that build another system)."""
    cls = type(sut)
    builtin = [n for n, f in SYSTEMS.items() if f is cls]
    options = sut.options()
    if builtin and not options:
        return builtin[0], {}
    name = f"{cls.__module__}:{cls.__qualname__}"
    if cls.__module__ == "__main__" or "<locals>" in cls.__qualname__:
        raise SystemNotFound(
            f"{name} cannot be rebuilt by the run's other processes: define it at the top "
            "level of an importable module (your package, or a module on PYTHONPATH)"
        )
    try:
        return name, json.loads(json.dumps(options))  # tuples are lists from now on
    except (TypeError, ValueError) as exc:
        raise SystemNotFound(f"{name}: its options must be JSON values ({exc})") from None
