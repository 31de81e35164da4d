"""Avro values from a record schema, drawn to exercise a job and encoded as it reads them.

A job that decodes its topic with spark-avro's ``from_avro`` (often behind Confluent's 5-byte
wire header) gets, from :class:`AvroValues`, values of its own schema in which every field is
drawn from the record's ``draw.rng``: usually an ordinary value, and with ``edge_ratio`` an
edge of its type — null for a nullable field, the least and greatest ``int``/``long``, a
decimal's largest, smallest and finest values, empty text and text beyond the Basic
Multilingual Plane, an event time late (up to an hour before the record's place in its
writer's stream) or ahead of it. The same draw gives the same value; nothing comes from a
clock.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import struct
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import fastavro

from sealcheck.core.records import Draw
from sealcheck.formats import edges


@dataclass(frozen=True)
class AvroValues:
    """Values of one Avro record ``schema`` (a dict, or its JSON text).

    ``schema_id``: encode in Confluent's wire format (a zero byte, the id as 4 bytes big-endian,
    then the Avro body) — what a registry-backed producer writes; None: the bare Avro body.
    ``edge_ratio``: how often a field takes an edge of its type instead of an ordinary value."""

    schema: Mapping[str, Any] | str
    schema_id: int | None = None
    edge_ratio: float = 0.2
    _parsed: Any = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        doc = json.loads(self.schema) if isinstance(self.schema, str) else dict(self.schema)
        if doc.get("type") != "record":
            raise ValueError(f"schema of type {doc.get('type')!r}: give an Avro record schema")
        if not 0.0 <= self.edge_ratio <= 1.0:
            raise ValueError(f"edge_ratio={self.edge_ratio!r}: give a fraction from 0 to 1")
        object.__setattr__(self, "_parsed", fastavro.parse_schema(doc))

    def draw(self, draw: Draw, **fixed: Any) -> dict[str, Any]:
        """A record of the schema for ``draw``, each field from ``draw.rng`` (``fixed``: fields
        given as they are, such as the key's field)."""
        return _record(self._parsed, edges.Drawer(draw, self.edge_ratio), fixed)

    def encode(self, value: Mapping[str, Any]) -> bytes:
        """``value`` as the job reads it: the Avro body, behind the wire header with a
        ``schema_id``."""
        out = io.BytesIO()
        if self.schema_id is not None:
            out.write(b"\x00" + struct.pack(">I", self.schema_id))
        fastavro.schemaless_writer(out, self._parsed, dict(value))
        return out.getvalue()

    def decode(self, data: bytes) -> dict[str, Any]:
        """A value :meth:`encode` made (for ``effect``); a ValueError when it is not one."""
        body = data
        if self.schema_id is not None:
            if data[:1] != b"\x00" or len(data) < 5:
                raise ValueError("not in Confluent's wire format (no zero magic byte)")
            (found,) = struct.unpack(">I", data[1:5])
            if found != self.schema_id:
                raise ValueError(f"schema id {found}, not {self.schema_id}")
            body = data[5:]
        stream = io.BytesIO(body)
        try:
            value = fastavro.schemaless_reader(stream, self._parsed, None)
        except Exception as exc:  # fastavro raises what its decoding meets
            raise ValueError(f"not an Avro value of the schema: {type(exc).__name__}") from None
        if stream.read(1):
            raise ValueError("bytes left over after the Avro value")
        if not isinstance(value, dict):
            raise ValueError("not an Avro record")
        return value

    def bad(self, draw: Draw) -> bytes:
        """A value the job cannot decode (for a ``bad`` draw): a body cut short, or with the
        wire format a wrong magic byte."""
        whole = self.encode(self.draw(draw))
        if self.schema_id is not None and draw.rng.random() < 0.5:
            return b"\x01" + whole[1:]
        return whole[: max(0, len(whole) // 2 - 1)] + b"\xff"


def _record(schema: Mapping[str, Any], d: edges.Drawer, fixed: Mapping[str, Any]) -> dict[str, Any]:
    return {
        f["name"]: fixed[f["name"]] if f["name"] in fixed else _value(f["type"], d)
        for f in schema["fields"]
    }


def _value(schema: Any, d: edges.Drawer) -> Any:
    """A value of ``schema`` (a parsed Avro type)."""
    if isinstance(schema, list):  # a union: null (when allowed) as an edge, else a branch
        others = [s for s in schema if s != "null"]
        if "null" in schema and (not others or d.edgy()):
            return None
        return _value(d.rng.choice(others), d)
    if isinstance(schema, str):
        return _primitive(schema, d)
    logical = schema.get("logicalType")
    if logical is not None:
        return _logical(schema, logical, d)
    kind = schema["type"]
    if kind == "record":
        return _record(schema, d, {})
    if kind == "enum":
        return d.rng.choice(schema["symbols"])
    if kind == "array":
        return [_value(schema["items"], d) for _ in range(d.rng.randrange(0, 4))]
    if kind == "map":
        return {f"k{i}": _value(schema["values"], d) for i in range(d.rng.randrange(0, 4))}
    if kind == "fixed":
        return d.rng.randbytes(schema["size"])
    return _primitive(kind, d)


def _primitive(kind: str, d: edges.Drawer) -> Any:
    rng, edge = d.rng, d.edgy()
    if kind == "null":
        return None
    if kind == "boolean":
        return rng.random() < 0.5
    if kind in ("int", "long"):
        return edges.whole(rng, edge, 31 if kind == "int" else 63)
    if kind in ("float", "double"):
        return edges.real(rng, edge, 3.4e38 if kind == "float" else 1.7e308)
    if kind == "string":
        return edges.text(rng, edge)
    if kind == "bytes":
        return b"" if edge else rng.randbytes(rng.randrange(1, 16))
    raise ValueError(f"Avro type {kind!r} is not drawn: give it in fixed=")


def _logical(schema: Mapping[str, Any], logical: str, d: edges.Drawer) -> Any:
    rng, edge = d.rng, d.edgy()
    if logical == "decimal":
        return edges.fixed_point(rng, edge, int(schema["precision"]), int(schema.get("scale", 0)))
    if logical in ("timestamp-millis", "timestamp-micros", "local-timestamp-millis"):
        at = edges.event_time(rng, edge, d.draw.number)
        return at.replace(tzinfo=None) if logical.startswith("local-") else at
    if logical == "date":
        return (edges.EPOCH + dt.timedelta(days=d.draw.number % 3650)).date()
    if logical == "uuid":
        return str(uuid.UUID(int=rng.getrandbits(128), version=4))
    base = {k: v for k, v in schema.items() if k != "logicalType"}
    return _value(base.get("type") if set(base) == {"type"} else base, d)
