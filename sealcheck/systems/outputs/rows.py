"""A table's rows as the ``(key, value)`` bytes the checkers compare, for every output read
from tables (Delta, SQL): the key column(s) and, as JSON, the other columns but the excluded
ones — or one value column's text as it is — through the encoding the system's mapping uses
(:func:`sealcheck.core.effects.encode_key`, :func:`~sealcheck.core.effects.encode_row`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sealcheck.core.effects import encode_key, encode_row


class Encoder:
    """A table's rows as the ``(key, value)`` bytes the checkers compare."""

    def __init__(
        self, key: str | tuple[str, ...], value: str | None, exclude: Sequence[str]
    ) -> None:
        self.key = (key,) if isinstance(key, str) else tuple(key)
        self.value, self.exclude = value, tuple(exclude)

    def __call__(self, row: dict[str, Any]) -> tuple[bytes, bytes]:
        """One row's key and value."""
        keys = tuple(row[k] for k in self.key)
        key = encode_key(keys[0] if len(keys) == 1 else keys)
        if self.value is not None:
            value = row[self.value]
            if value is None or isinstance(value, bytes):
                return key, value if value is not None else b"null"
            return key, encode_row(str(value))
        rest = {c: v for c, v in row.items() if c not in self.key and c not in self.exclude}
        return key, encode_row(rest)
