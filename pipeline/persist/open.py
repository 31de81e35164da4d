"""Open a store from a location string: ``sqlite:///abs/path.db`` or a plain file path."""

from __future__ import annotations

from pathlib import Path

from pipeline.persist.api import Persist


def open_store(location: str) -> Persist:
    """Open the store at ``location``; an unknown scheme is a :class:`ValueError` naming it."""
    if location.startswith("sqlite://"):
        return _sqlite(Path(location.removeprefix("sqlite://")))
    if "://" in location:
        scheme = location.split("://", 1)[0]
        raise ValueError(
            f"store {location!r} has unknown scheme {scheme!r}; use sqlite:///path/to/store.db "
            "or a plain file path"
        )
    return _sqlite(Path(location))


def _sqlite(path: Path) -> Persist:
    from pipeline.persist.sqlite import SqlitePersist

    return SqlitePersist(path)
