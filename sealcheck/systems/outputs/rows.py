"""A table's rows as the ``(key, value)`` bytes the checkers compare, for every output read
from tables (Delta, SQL): the key column(s) and, as JSON, the other columns but the excluded
ones — or one value column's text as it is — through the encoding the system's mapping uses
(:func:`sealcheck.core.effects.encode_key`, :func:`~sealcheck.core.effects.encode_row`).

Text a table holds that is not UTF-8 (Spark's ``CAST(value AS STRING)`` keeps a Kafka value's
bytes as they are) is read as :func:`text` reads it: each invalid sequence as U+FFFD, what
``raw.decode("utf-8", errors="replace")`` gives — so a mapping's effect can say the same."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from sealcheck.core.effects import encode_key, encode_row


def text(raw: bytes) -> str:
    """Bytes a table holds as text, as text: UTF-8, each invalid sequence replaced by U+FFFD
    (``raw.decode("utf-8", errors="replace")``: the one rule of every output's reader)."""
    return raw.decode("utf-8", "replace")


def arrow_rows(data: pa.Table | pa.RecordBatch) -> list[dict[str, Any]]:
    """The rows of an Arrow table or batch as dicts (``to_pylist``), text that is not UTF-8
    read by :func:`text` (Arrow's own conversion refuses it)."""
    try:
        return list(data.to_pylist())
    except UnicodeDecodeError:
        pass
    columns = [_column(data.column(i)) for i in range(data.num_columns)]
    return [dict(zip(data.schema.names, vs, strict=True)) for vs in zip(*columns, strict=True)]


def _column(col: pa.Array | pa.ChunkedArray) -> list[Any]:
    """One column's values, its text read by :func:`text` when Arrow refuses it."""
    try:
        return list(col.to_pylist())
    except UnicodeDecodeError:  # read as bytes (a cast that checks nothing), then as text
        return [_decoded(v, col.type) for v in col.cast(_as_binary(col.type)).to_pylist()]


def _as_binary(t: pa.DataType) -> pa.DataType:
    """``t`` with every text type in it made the binary type of the same layout."""
    if pa.types.is_string(t):
        return pa.binary()
    if pa.types.is_large_string(t):
        return pa.large_binary()
    if pa.types.is_string_view(t):
        return pa.binary_view()
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_as_binary(f.type)) for f in t])
    if pa.types.is_map(t):
        return pa.map_(_as_binary(t.key_type), t.item_field.with_type(_as_binary(t.item_type)))
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_as_binary(t.value_type)))
    if pa.types.is_large_list(t):
        return pa.large_list(t.value_field.with_type(_as_binary(t.value_type)))
    return t


def _decoded(value: Any, t: pa.DataType) -> Any:
    """A value read with :func:`_as_binary`'s type, its text (of type ``t``) decoded."""
    if value is None:
        return None
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return text(value)
    if pa.types.is_struct(t):
        return {f.name: _decoded(value[f.name], f.type) for f in t}
    if pa.types.is_map(t):
        return [(_decoded(k, t.key_type), _decoded(v, t.item_type)) for k, v in value]
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return [_decoded(v, t.value_type) for v in value]
    return value


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


@dataclass(frozen=True)
class RowShape:
    """How a job's rows are read, one value for every output of tables or topics (Delta,
    SQLite, PostgreSQL, Kafka): the key column(s), the dead-letter table's own, a column
    holding the row's value as it is, and columns of run metadata never compared. Each output
    declares these as fields of its own (its constructor's order) and reads them through this
    (:class:`TableRows`); a new output of tables does the same."""

    key: str | tuple[str, ...] = "key"
    #: the dead-letter table's key column(s) (None: ``key``)
    errors_key: str | tuple[str, ...] | None = None
    #: a column holding the row's value as it is (None: the other columns, as JSON)
    value: str | None = None
    #: columns of run metadata, never compared (a batch id, a load time)
    exclude: tuple[str, ...] = ()

    def encoder(self, collection: str, ignore: Sequence[str] = ()) -> Encoder:
        """How the rows of ``collection`` (``data``, ``errors``) are encoded, leaving out
        ``ignore`` too (columns the reader adds, as a change feed's own)."""
        key = (self.errors_key or self.key) if collection == "errors" else self.key
        return Encoder(key, self.value, (*self.exclude, *ignore))


class TableRows:
    """An output whose dataclass fields include :class:`RowShape`'s: read as one."""

    key: str | tuple[str, ...]
    errors_key: str | tuple[str, ...] | None
    value: str | None
    exclude: tuple[str, ...]

    @property
    def row_shape(self) -> RowShape:
        """Its rows' shape (:class:`RowShape`)."""
        return RowShape(self.key, self.errors_key, self.value, tuple(self.exclude))
