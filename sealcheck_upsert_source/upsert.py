"""The upsert step, as pure logic: records of one step in, differential updates out.

Record encoding (what the workload writes and the checkers model independently):

* key: UTF-8 text; value: strict JSON (RFC 8259, as orjson parses it) in UTF-8, or null
  (a tombstone);
* within a step, per raw key, the record with the highest ``(offset, partition)`` wins;
  a key is assumed to live in one partition (Kafka's default key partitioning), so this is
  the same as "the highest offset wins" over the whole replayed log;
* the winner decides both collections for that key:

  =====================  ======================  =================================
  winner                 ``data``                ``errors`` (key ``error_key(raw)``)
  =====================  ======================  =================================
  good key, JSON value   ``key -> value bytes``  nothing
  good key, tombstone    nothing                 nothing
  good key, bad value    nothing                 ``{"reason": "value is not UTF-8 JSON", …}``
  key not UTF-8          (no data key)           ``{"reason": "key is not UTF-8", …}``
  null key               (no data key)           ``{"reason": "null key", …}`` (per partition)
  =====================  ======================  =================================

  Error values are JSON ``{"offset": o, "partition": p, "reason": r}`` (sorted keys), so a
  later record for the same raw key retracts the error (upsert semantics per raw key).
* Against the previous state an update emits ``(k, old, t, -1)`` and ``(k, new, t, +1)``;
  a deletion only the retraction; an unchanged value nothing.
"""

from __future__ import annotations

import json
from binascii import hexlify
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

import orjson

from sealcheck_upsert_source.persist.api import Update

NULL_KEY_ERROR = "null key"
BAD_KEY_ERROR = "key is not UTF-8"
BAD_VALUE_ERROR = "value is not UTF-8 JSON"


class SourceRecord(NamedTuple):
    """One Kafka record: position, raw key (None = null key) and raw value (None = tombstone).

    A named tuple: a step builds one per winner (up to 100,000), issue 28."""

    partition: int
    offset: int
    key: bytes | None
    value: bytes | None


def error_key(raw_key: bytes | None, partition: int) -> bytes:
    """The ``errors`` collection key of a raw Kafka key.

    Null keys share one entry *per partition*: they are spread over partitions, and offsets of
    different partitions have no order, so one shared entry would depend on step boundaries.
    """
    if raw_key is None:
        return b"null:" + str(partition).encode()
    return b"key:" + hexlify(raw_key)


def _error_value(rec: SourceRecord, reason: str) -> bytes:
    body = {"offset": rec.offset, "partition": rec.partition, "reason": reason}
    return json.dumps(body, sort_keys=True).encode()


def _valid_json(value: bytes) -> bool:
    """Strict RFC 8259 JSON in UTF-8 (orjson: no NaN/Infinity, no lone surrogates)."""
    try:
        orjson.loads(value)
    except orjson.JSONDecodeError:
        return False
    return True


def decide(rec: SourceRecord) -> tuple[bytes | None, bytes | None, bytes | None]:
    """What the winning record means: ``(data_key, data_value, error_value)``.

    ``data_key`` is None when the raw key cannot be a data key (null or not UTF-8).
    """
    if rec.key is None:
        return None, None, _error_value(rec, NULL_KEY_ERROR)
    try:
        rec.key.decode("utf-8")
    except UnicodeDecodeError:
        return None, None, _error_value(rec, BAD_KEY_ERROR)
    if rec.value is None:
        return rec.key, None, None
    if not _valid_json(rec.value):
        return rec.key, None, _error_value(rec, BAD_VALUE_ERROR)
    return rec.key, rec.value, None


def winners(records: Iterable[SourceRecord]) -> dict[bytes, SourceRecord]:
    """Per ``errors`` key (raw key; null keys per partition): highest ``(offset, partition)``."""
    best: dict[bytes, SourceRecord] = {}
    for rec in records:
        slot = error_key(rec.key, rec.partition)
        cur = best.get(slot)
        if cur is None or (rec.offset, rec.partition) > (cur.offset, cur.partition):
            best[slot] = rec
    return best


@dataclass
class StepOutput:
    """The updates one step emits for ``data`` and ``errors``."""

    data: list[Update] = field(default_factory=list)
    errors: list[Update] = field(default_factory=list)


def _emit(out: list[Update], key: bytes, old: bytes | None, new: bytes | None, ts: int) -> None:
    if old == new:
        return
    if old is not None:
        out.append(Update(key, old, ts, -1))
    if new is not None:
        out.append(Update(key, new, ts, +1))


def upsert_step(
    step_winners: Iterable[SourceRecord],
    data: Mapping[bytes, bytes],
    errors: Mapping[bytes, bytes],
    ts: int,
) -> StepOutput:
    """Diff the step's winners (one per raw key) against the previous ``data``/``errors``."""
    out = StepOutput()
    emit, decide_, data_get, errors_get = _emit, decide, data.get, errors.get
    for rec in step_winners:
        data_key, new_value, new_error = decide_(rec)
        if data_key is not None:
            emit(out.data, data_key, data_get(data_key), new_value, ts)
        if errors or new_error is not None:  # else no error to retract and none to add
            ekey = error_key(rec.key, rec.partition)
            emit(out.errors, ekey, errors_get(ekey), new_error, ts)
    # in the updates' own order (key, value, ts, diff), compared as tuples in C
    out.data.sort()
    out.errors.sort()
    return out


def apply(state: dict[bytes, bytes], updates: Iterable[Update]) -> None:
    """Apply a step's consolidated updates to an in-memory key → value state."""
    get = state.get
    for key, value, _, diff in updates:
        if diff < 0:
            if get(key) == value:
                del state[key]
        else:
            state[key] = value
