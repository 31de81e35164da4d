"""The reference model: what the upsert collections must hold, from the topic alone.

Written independently of ``pipeline/upsert.py`` (an N-version check): replay the topic up
to given per-partition offsets; per raw key (null keys: per partition) the record with the
highest ``(offset, partition)`` wins; the winner decides ``data`` and ``errors`` as
``docs/formats.md`` ("Record encoding") specifies.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import orjson

from sealcheck.rundir.files import TopicRecord


@dataclass(frozen=True)
class ModelState:
    """Expected contents of ``data`` and ``errors`` (key → value)."""

    data: dict[bytes, bytes]
    errors: dict[bytes, bytes]


def _error(rec: TopicRecord, reason: str) -> bytes:
    return json.dumps(
        {"partition": rec.partition, "offset": rec.offset, "reason": reason}, sort_keys=True
    ).encode()


def _is_json(raw: bytes) -> bool:
    try:
        orjson.loads(raw)
        return True
    except orjson.JSONDecodeError:
        return False


def expected_state(records: Iterable[TopicRecord], upto: Mapping[int, int]) -> ModelState:
    """The state after every record with ``offset < upto[partition]``."""
    latest: dict[tuple[bytes | None, int], TopicRecord] = {}
    for rec in records:
        if rec.offset >= upto.get(rec.partition, 0):
            continue
        slot = (rec.key, rec.partition if rec.key is None else -1)
        prev = latest.get(slot)
        if prev is None or (rec.offset, rec.partition) > (prev.offset, prev.partition):
            latest[slot] = rec
    data: dict[bytes, bytes] = {}
    errors: dict[bytes, bytes] = {}
    for (key, _), rec in latest.items():
        if key is None:
            errors[f"null:{rec.partition}".encode()] = _error(rec, "null key")
            continue
        try:
            key.decode("utf-8")
        except UnicodeDecodeError:
            errors[b"key:" + key.hex().encode()] = _error(rec, "key is not UTF-8")
            continue
        if rec.value is None:
            continue
        if _is_json(rec.value):
            data[key] = rec.value
        else:
            errors[b"key:" + key.hex().encode()] = _error(rec, "value is not UTF-8 JSON")
    return ModelState(data, errors)
