"""How the versions of a system under test map records to rows, when they differ (issue 53):
each version's own mapping (:mod:`sealcheck.core.effects`), in upgrade order, and how a row one
version wrote reads once a later version runs.

A job whose release 2 adds a column states it in its descriptor's ``effect``, which then takes
the version as a second argument::

    def effect(self, record: Record, version: str = "v1") -> Upsert | Delete:
        row = {k: doc.get(k) for k in ("i", "w", "p")}
        if version == "v2":
            row["tier"] = "even" if row["i"] % 2 == 0 else "odd"
        return Upsert(record.key.decode(), row)

Versions must agree on everything but their *versioned columns* — the columns of the ``data``
table that not every version's rows hold: the same keys, tables and values elsewhere. A row an
earlier version wrote reads under a later one as :meth:`VersionEffects.migrated` says: by
default with the later version's new columns null (what ``ALTER TABLE ... ADD COLUMNS`` gives
the rows already there); a descriptor may define ``migrate(row, version)`` instead.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

from sealcheck.core.effects import EffectMapping

#: ``migrate(row, version)``: a row written by the version before ``version``, as it reads once
#: ``version`` runs
Migration: TypeAlias = Callable[[Mapping[str, Any], str], Mapping[str, Any]]


@dataclass(frozen=True)
class VersionEffects:
    """Every version's mapping, in upgrade order (the first is the one a run starts with), and
    the descriptor's ``migrate`` (None: a later version's new columns read as null)."""

    mappings: tuple[tuple[str, EffectMapping], ...]
    migrate: Migration | None = None

    @property
    def names(self) -> tuple[str, ...]:
        """The versions, in upgrade order."""
        return tuple(v for v, _ in self.mappings)

    def migrated(
        self, row: Mapping[str, Any], written_by: str, to: str, columns: tuple[str, ...]
    ) -> dict[str, Any]:
        """``row``, written by ``written_by``, as version ``to`` (the same or a later one)
        reads it: through ``migrate`` for each version after ``written_by`` up to ``to`` in
        turn; by default with the ``columns`` it lacks null."""
        names = self.names
        out = dict(row)
        for later in names[names.index(written_by) + 1 : names.index(to) + 1]:
            if self.migrate is not None:
                moved = self.migrate(out, later)
                if not isinstance(moved, Mapping):
                    raise TypeError(
                        f"migrate(row, {later!r}) returned {type(moved).__name__}, not a mapping "
                        "of column to value: return the row as the later version holds it"
                    )
                out = dict(moved)
        out.update({c: None for c in columns if c not in out})
        return out
