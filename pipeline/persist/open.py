"""Open a store from a location string: ``sqlite:///abs/path.db``, a plain file path, or a
PostgreSQL URI ``postgresql://user@host:port/database``."""

from __future__ import annotations

from pathlib import Path

from pipeline.persist.api import Persist


def open_store(location: str) -> Persist:
    """Open the store at ``location``; an unknown scheme is a :class:`ValueError` naming it."""
    if location.startswith("sqlite://"):
        return _sqlite(Path(location.removeprefix("sqlite://")))
    if location.startswith(("postgresql://", "postgres://")):
        from pipeline.persist.postgres import PostgresPersist

        return PostgresPersist(location)
    if "://" in location:
        scheme = location.split("://", 1)[0]
        raise ValueError(
            f"store {location!r} has unknown scheme {scheme!r}; use sqlite:///path/to/store.db, "
            "a plain file path or postgresql://user@host:port/database"
        )
    return _sqlite(Path(location))


def _sqlite(path: Path) -> Persist:
    from pipeline.persist.sqlite import SqlitePersist

    return SqlitePersist(path)
