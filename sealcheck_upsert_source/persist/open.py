"""Open a store from a location string: ``sqlite:///abs/path.db``, a plain file path, or a
PostgreSQL URI ``postgresql://user@host:port/database``."""

from __future__ import annotations

from pathlib import Path

from sealcheck_upsert_source.persist.api import Persist


def open_store(location: str, durable: bool = True) -> Persist:
    """Open the store at ``location``; an unknown scheme is a :class:`ValueError` naming it.

    ``durable=False`` is a deliberate bug (``--broken non-durable-commits``): commits return
    before they reach the disk (SQLite ``synchronous=OFF``, PostgreSQL
    ``synchronous_commit=off``), so a lost page cache loses sealed steps."""
    if location.startswith("sqlite://"):
        return _sqlite(Path(location.removeprefix("sqlite://")), durable)
    if location.startswith(("postgresql://", "postgres://")):
        from sealcheck_upsert_source.persist.postgres import PostgresPersist

        return PostgresPersist(location, durable=durable)
    if "://" in location:
        scheme = location.split("://", 1)[0]
        raise ValueError(
            f"store {location!r} has unknown scheme {scheme!r}; use sqlite:///path/to/store.db, "
            "a plain file path or postgresql://user@host:port/database"
        )
    return _sqlite(Path(location), durable)


def _sqlite(path: Path, durable: bool) -> Persist:
    from sealcheck_upsert_source.persist.sqlite import SqlitePersist

    return SqlitePersist(path, durable=durable)
