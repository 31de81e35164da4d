"""The persist layer: named, sealed collections of differential updates.

Open a store with :func:`open_store`; every backend implements :class:`Persist`.
"""

from sealcheck_upsert_source.persist.api import (
    Batch,
    InvariantViolation,
    Persist,
    PersistError,
    ReadBelowSince,
    ReadNotSealed,
    Update,
    UpperMismatch,
    consolidate,
)
from sealcheck_upsert_source.persist.open import open_store

__all__ = [
    "Batch",
    "InvariantViolation",
    "Persist",
    "PersistError",
    "ReadBelowSince",
    "ReadNotSealed",
    "Update",
    "UpperMismatch",
    "consolidate",
    "open_store",
]
