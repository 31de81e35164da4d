"""JSON values shaped like a user's example document, drawn to exercise a job.

:class:`JsonValues` takes one example of the job's records and draws documents of the same
shape: each field of the example's kind — a whole number, a float, text, a boolean, a nested
object, a list like its first item — and text that reads as a decimal (``"12.34"``) or an ISO
event time (``"2026-05-01T10:00:00Z"``) stays one, at the same scale or in the same form. With
``edge_ratio``, a field takes an edge of its kind (:mod:`sealcheck.formats.edges`); a field named
in ``nullable`` is null as one of its edges. :meth:`JsonValues.from_schema` reads the shape
from the job's JSON Schema instead (:mod:`sealcheck.formats.json_schema`).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sealcheck.core.records import Draw
from sealcheck.formats import edges
from sealcheck.formats.json_schema import (
    DECIMAL_FORM,
    TIME_FORM,
    Between,
    OneOf,
    OrNull,
    shape_of,
)


@dataclass(frozen=True)
class JsonValues:
    """Documents shaped like ``example`` (a JSON object, or its text); ``nullable``: the
    fields (top-level names) that may be null; ``edge_ratio``: how often a field takes an
    edge of its kind."""

    example: Mapping[str, Any] | str
    nullable: Sequence[str] = ()
    edge_ratio: float = 0.2
    _doc: dict[str, Any] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        doc = json.loads(self.example) if isinstance(self.example, str) else self.example
        if not isinstance(doc, Mapping):
            raise ValueError(f"example {doc!r}: give one JSON object, as the job reads it")
        if not 0.0 <= self.edge_ratio <= 1.0:
            raise ValueError(f"edge_ratio={self.edge_ratio!r}: give a fraction from 0 to 1")
        missing = sorted(set(self.nullable) - set(doc))
        if missing:
            raise ValueError(f"nullable names {missing}, which the example lacks")
        object.__setattr__(self, "_doc", dict(doc))

    @classmethod
    def from_schema(cls, schema: Mapping[str, Any] | str, edge_ratio: float = 0.2) -> JsonValues:
        """Documents of the JSON Schema ``schema`` (a dict, or its text): its properties of
        their types, a ``date-time`` an ISO event time, a string with ``examples`` in the form
        of its first (``"12.99"``: a decimal at that scale), an ``enum`` one of its values, a
        type that allows null null as one of its edges. A keyword that constrains values and
        is not drawn (``pattern``, ``minimum``, ...) is a ValueError naming where it is."""
        doc = json.loads(schema) if isinstance(schema, str) else schema
        if not isinstance(doc, Mapping):
            raise ValueError(f"schema {doc!r}: give a JSON Schema object")
        example, nullable = shape_of(doc)
        return cls(example, nullable, edge_ratio)

    def draw(self, draw: Draw, **fixed: Any) -> dict[str, Any]:
        """A document for ``draw``, each field from ``draw.rng`` (``fixed``: fields given as
        they are, such as the key's)."""
        d = edges.Drawer(draw, self.edge_ratio)
        out: dict[str, Any] = {}
        for name, like in self._doc.items():
            if name in fixed:
                out[name] = fixed[name]
            elif name in self.nullable and d.edgy():
                out[name] = None
            else:
                out[name] = _like(like, d)
        return out

    def encode(self, value: Mapping[str, Any]) -> bytes:
        """``value`` as UTF-8 JSON (text beyond ASCII as it is, not escaped)."""
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()

    def decode(self, data: bytes) -> dict[str, Any]:
        """A document :meth:`encode` made (for ``effect``); a ValueError when it is not one."""
        try:
            doc = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"not a JSON document: {type(exc).__name__}") from None
        if not isinstance(doc, dict):
            raise ValueError("not a JSON object")
        return doc

    def bad(self, draw: Draw) -> bytes:
        """A value the job cannot read (for a ``bad`` draw): a document cut short, or bytes
        that are not UTF-8."""
        whole = self.encode(self.draw(draw))
        if draw.rng.random() < 0.5:
            return b"\xff\xfe" + whole
        return whole[: len(whole) // 2]


def _like(example: Any, d: edges.Drawer) -> Any:
    """A value of the same kind as ``example``."""
    rng = d.rng
    if isinstance(example, OneOf):
        return rng.choice(example.choices)
    if isinstance(example, OrNull):
        return None if d.edgy() else _like(example.like, d)
    if isinstance(example, Between):
        return _between(example, d)
    if isinstance(example, bool):
        return rng.random() < 0.5
    if isinstance(example, int):
        return edges.whole(rng, d.edgy(), 52)  # within a double's exact range: JSON readers
    if isinstance(example, float):
        return edges.real(rng, d.edgy())
    if isinstance(example, str):
        return _text_like(example, d)
    if isinstance(example, Mapping):
        return {k: _like(v, d) for k, v in example.items()}
    if isinstance(example, list):
        return [_like(example[0], d) for _ in range(rng.randrange(0, 4))] if example else []
    return example  # null: kept (its kind is unknown)


def _between(bounds: Between, d: edges.Drawer) -> int | float:
    """A number within ``bounds``: an edge is one of the bounds."""
    rng, edge = d.rng, d.edgy()
    if bounds.whole:
        low, high = int(bounds.low), int(bounds.high)
        return rng.choice((low, high)) if edge else rng.randint(low, high)
    return rng.choice((bounds.low, bounds.high)) if edge else rng.uniform(bounds.low, bounds.high)


def _text_like(example: str, d: edges.Drawer) -> str:
    """Text of the same form: a decimal at the same scale, an event time in the same form."""
    edge = d.edgy()
    if m := DECIMAL_FORM.fullmatch(example):
        scale = len(m.group(1))
        return str(edges.fixed_point(d.rng, edge, 12 + scale, scale))
    if m := TIME_FORM.fullmatch(example):
        zone = m.group(2)
        here = dt.UTC if zone in (None, "Z") else _zone(zone)
        at = edges.event_time(d.rng, edge, d.draw.number).astimezone(here)
        digits = len(m.group(1) or ".") - 1
        fraction = f"{at.microsecond / 1e6:.{digits}f}"[1:] if digits else ""
        return at.strftime("%Y-%m-%dT%H:%M:%S") + fraction + (zone or "")
    return edges.text(d.rng, edge)


def _zone(offset: str) -> dt.timezone:
    sign = -1 if offset[0] == "-" else 1
    return dt.timezone(sign * dt.timedelta(hours=int(offset[1:3]), minutes=int(offset[4:6])))
