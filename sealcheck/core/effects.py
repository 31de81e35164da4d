"""What one input record should do to a system's output: the output contract of a system
under test, stated by its descriptor as a mapping from a record to its effects.

A system that writes what it reads in its own shape — parses the JSON value into columns,
deletes on a tombstone, sends what it cannot parse to a dead-letter table — is judged against
its own mapping (:attr:`sealcheck.systems.api.SystemUnderTest.effect`):
``effect(record) -> Upsert | Delete | a sequence of them | SKIP``:

* :class:`Upsert` ``(key, row)``: the key holds this row in ``data`` from now on;
* :class:`Delete` ``(key)``: the key is absent from ``data``;
* :func:`DeadLetter` ``(key, row)``: the row is upserted into the dead-letter table (the
  ``errors`` collection) under ``key``;
* :data:`SKIP` (or ``None``, or ``()``): the record changes nothing.

Per table and key, the effect of the record with the highest offset decides (records of one
key must come from one partition). Keys and rows are compared after :func:`encode_key` and
:func:`encode_row`, which both sides go through: the mapping's effects
(:mod:`sealcheck.rundir.effects`) and the rows a system's output is read back as
(:mod:`sealcheck.systems.outputs`). Columns that carry run metadata (a batch id, a load time)
are left out of the rows by the output's ``exclude``, so they are never compared.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

import orjson

from sealcheck.core.said import named, short

#: the collections of a system's output: ``data`` (the upserted table) and ``errors`` (its
#: dead-letter table)
TABLES = ("data", "errors")


@dataclass(frozen=True)
class Record:
    """One input record, as the mapping sees it."""

    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    #: its Kafka headers, (name, bytes) pairs in order (none: empty)
    headers: tuple[tuple[str, bytes], ...] = ()

    @property
    def key_text(self) -> str | None:
        """The key as UTF-8 text (None for a null key; raises ``UnicodeDecodeError`` for a key
        that is not UTF-8)."""
        return None if self.key is None else self.key.decode("utf-8")

    @property
    def is_tombstone(self) -> bool:
        """A record without a value (Kafka's delete marker)."""
        return self.value is None


Key: TypeAlias = str | bytes | int | tuple[Any, ...]


@dataclass(frozen=True)
class Upsert:
    """The key holds ``row`` (a mapping of column to value, metadata columns left out; or
    bytes / text held as they are) in ``table`` from now on."""

    key: Key
    row: Mapping[str, Any] | bytes | str
    table: str = "data"


@dataclass(frozen=True)
class Delete:
    """The key is absent from ``table`` from now on."""

    key: Key
    table: str = "data"


def DeadLetter(key: Key, row: Mapping[str, Any] | bytes | str) -> Upsert:
    """The record goes to the dead-letter table (``errors``) under ``key`` with ``row``."""
    return Upsert(key, row, "errors")


Effect: TypeAlias = Upsert | Delete
#: what a mapping returns for one record
Effects: TypeAlias = Effect | Sequence[Effect] | None
#: a system's mapping from one input record to its effects
EffectMapping: TypeAlias = Callable[[Record], Effects]
#: the record changes nothing
SKIP: tuple[Effect, ...] = ()


class EffectError(ValueError):
    """A mapping returned something that is not an effect, or a key or row that cannot be
    encoded; the message names what and why."""


class NotAnEffect(EffectError):
    """A mapping returned, or listed among its effects, a ``value`` that is no effect;
    ``fix`` says what to return instead."""

    fix = "return Upsert(key, row), Delete(key), DeadLetter(key, row), a list of them, or SKIP"

    def __init__(self, value: object) -> None:
        self.value = value
        super().__init__(f"{named(value)} is not an effect: {self.fix}")


def effects_of(result: Effects) -> tuple[Effect, ...]:
    """A mapping's result as a tuple of effects, each checked (:class:`EffectError`): one
    effect, a sequence of them, or None; anything else (a number, text, a mapping) is named
    with its type."""
    if result is None:
        return ()
    items: Iterable[object]
    if isinstance(result, Upsert | Delete):
        items = (result,)
    elif isinstance(result, Iterable) and not isinstance(result, str | bytes | Mapping):
        items = result
    else:
        raise NotAnEffect(result)
    found: list[Effect] = []
    for e in items:
        if not isinstance(e, Upsert | Delete):
            raise NotAnEffect(e)
        if e.table not in TABLES:
            raise EffectError(f"{short(e)}: table {e.table!r} is not one of {', '.join(TABLES)}")
        found.append(e)
    tables = [e.table for e in found]
    if len(set(tables)) != len(tables):
        raise EffectError(f"{short(found)}: at most one effect per table for one record")
    return tuple(found)


def checked_effects(result: Effects) -> tuple[Effect, ...]:
    """:func:`effects_of`, with every key and row encodable (:func:`encode_key`,
    :func:`encode_row`): every check the harness applies to what a mapping returns, before a
    run (on a sample of its records) and after it (on the whole topic)."""
    found = effects_of(result)
    for e in found:
        encode_key(e.key)
        if not isinstance(e, Delete):
            encode_row(e.row)
    return found


def _plain(value: Any) -> Any:
    """A value in the one shape both sides compare: integral floats as integers, decimals
    as numbers, times as ISO text, bytes as hex, mappings with text keys, tuples as lists."""
    if isinstance(value, bool) or value is None or isinstance(value, str | int):
        return value
    if isinstance(value, float):
        if math.isfinite(value) and value.is_integer():
            return int(value)
        return value if math.isfinite(value) else str(value)
    if isinstance(value, decimal.Decimal):
        if value == value.to_integral_value():
            return int(value)
        return format(value.normalize(), "f")
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    raise EffectError(f"{value!r} ({type(value).__name__}) cannot be compared: use plain values")


def encode_key(key: Key) -> bytes:
    """A key as the bytes both sides compare: text as UTF-8, bytes as they are, a whole
    number as its digits, a composite key (a tuple) as a JSON array."""
    if isinstance(key, bytes):
        return key
    if isinstance(key, str):
        return key.encode("utf-8")
    if isinstance(key, int) and not isinstance(key, bool):
        return str(key).encode()
    if isinstance(key, tuple):
        return trimmed(orjson.dumps(_plain(key)))
    raise EffectError(f"key {key!r} ({type(key).__name__}): use text, bytes, an integer or a tuple")


def trimmed(encoded: bytes) -> bytes:
    """What ``orjson.dumps`` returned, copied into bytes of its own size: orjson (3.12 on)
    returns each result in a buffer of 4 KiB or more, which a row kept in a list (a batch of
    effects, an output's states) holds for as long as it lives (70 times a 60-byte row)."""
    return bytes(memoryview(encoded))


def encode_row(row: Mapping[str, Any] | bytes | str) -> bytes:
    """A row as the bytes both sides compare: a mapping as JSON with sorted keys after
    :func:`_plain`, bytes as they are, text as UTF-8."""
    if isinstance(row, bytes):
        return row
    if isinstance(row, str):
        return row.encode("utf-8")
    if isinstance(row, Mapping):
        return trimmed(orjson.dumps(_plain(row), option=orjson.OPT_SORT_KEYS))
    raise EffectError(f"row {row!r} ({type(row).__name__}): use a mapping of column to value")
