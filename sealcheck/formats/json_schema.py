"""A JSON Schema read as the shape :class:`~sealcheck.formats.json_values.JsonValues` draws
from: an example document whose fields stand for their kinds, the names of the fields that
may be null, and the choices of each ``enum``.

What is read: ``type`` (one, or a list with ``"null"``), ``properties`` (every property is
drawn, required or not), ``items``, ``enum`` and ``const``, ``format: date-time`` (an ISO
event time in UTC, ``Z``), ``examples`` (a string's first example gives its form: ``"12.99"``
a decimal at that scale, an ISO time in its form and zone — and a ``pattern`` beside such an
example is taken as that form's), ``minimum``/``maximum`` and their exclusive forms on numbers
(drawn within, the bounds as edges), ``anyOf``/``oneOf`` of one schema and ``{"type":
"null"}``, and local ``$ref``\\ s (``#/$defs/...``, ``#/definitions/...``). Anything else that
changes which values are allowed (a ``pattern`` without such an example, ``multipleOf``, a
choice of two schemas, ...) is refused in one line naming where it is, rather than drawn
wrong.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: keywords that only describe (never constrain what is drawn)
_NOTES = frozenset(
    {"$schema", "$id", "$comment", "title", "description", "default", "examples", "required",
     "additionalProperties", "$defs", "definitions", "deprecated", "readOnly", "writeOnly"}
)  # fmt: skip


@dataclass(frozen=True)
class OneOf:
    """A field drawn from fixed choices (``enum``, ``const``)."""

    choices: tuple[Any, ...]


@dataclass(frozen=True)
class Between:
    """A number drawn from ``low`` to ``high`` (``whole``: an integer), its bounds as edges."""

    low: float
    high: float
    whole: bool


@dataclass(frozen=True)
class OrNull:
    """A nested field that may be null (its kind: ``like``)."""

    like: Any


class SchemaError(ValueError):
    """A JSON Schema that cannot be drawn from: the message names where and what to do."""


def shape_of(schema: Mapping[str, Any]) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The example document ``schema`` (an object schema) stands for, and its top-level
    fields that may be null."""
    top = _resolved(schema, schema, "#")
    if _types(top, "#") != ["object"]:
        raise SchemaError('the schema is not of an object: give {"type": "object", ...}')
    shape = _object(top, schema, "#")
    nullable = tuple(name for name, like in shape.items() if isinstance(like, OrNull))
    return {n: v.like if isinstance(v, OrNull) else v for n, v in shape.items()}, nullable


def _object(node: Mapping[str, Any], root: Mapping[str, Any], at: str) -> dict[str, Any]:
    props = node.get("properties") or {}
    return {name: _shape(sub, root, f"{at}/properties/{name}") for name, sub in props.items()}


def _shape(node: Any, root: Mapping[str, Any], at: str) -> Any:
    node = _resolved(node, root, at)
    if "const" in node:
        return OneOf((node["const"],))
    if "enum" in node:
        return OneOf(tuple(node["enum"]))
    for key in ("anyOf", "oneOf"):
        if key in node:
            branches = [b for b in node[key] if _resolved(b, root, at) != {"type": "null"}]
            if len(branches) != 1:
                raise SchemaError(f"{at}: {key} of {len(branches)} schemas is not drawn: give one")
            inner = _shape(branches[0], root, f"{at}/{key}")
            return OrNull(inner) if len(branches) < len(node[key]) else inner
    known = {"type", "properties", "items", "format", *_BOUNDS}
    if "pattern" in node and _form_example(node):
        known.add("pattern")  # the example's form (a decimal, an ISO time) is the pattern's
    unknown = sorted(set(node) - _NOTES - known)
    if unknown:
        raise SchemaError(
            f"{at}: {', '.join(unknown)} is not drawn: leave it out of the schema given to "
            "from_schema and set the field in record(draw) yourself (a top-level one with "
            'draw(draw, name=value)), or, for a string, give "examples" of a decimal or an '
            "ISO time"
        )
    types = _types(node, at)
    kinds = [t for t in types if t != "null"]
    if len(kinds) != 1:
        raise SchemaError(f"{at}: type {types} is not drawn: give one type (and null)")
    like = _kind(kinds[0], node, root, at)
    return OrNull(like) if "null" in types else like


def _kind(kind: str, node: Mapping[str, Any], root: Mapping[str, Any], at: str) -> Any:
    if kind == "object":
        return _object(node, root, at)
    if kind == "array":
        return [_shape(node.get("items", {"type": "string"}), root, f"{at}/items")]
    if kind == "string":
        examples = node.get("examples")
        if isinstance(examples, list) and examples and isinstance(examples[0], str):
            return examples[0]
        if node.get("format") == "date-time":
            return "2026-01-01T00:00:00.000Z"
        return "text"
    if kind in ("integer", "number") and set(node) & set(_BOUNDS):
        return _between(node, kind == "integer", at)
    return {"integer": 1, "number": 0.5, "boolean": True}[kind]


#: the bounds of a number: keyword -> (a lower bound, exclusive)
_BOUNDS = {"minimum": (True, False), "exclusiveMinimum": (True, True),
           "maximum": (False, False), "exclusiveMaximum": (False, True)}  # fmt: skip
#: the forms a string example is drawn in (:mod:`sealcheck.formats.json_values`): a decimal
#: (its scale: group 1) and an ISO time (its fraction, group 1; its zone, group 2)
DECIMAL_FORM = re.compile(r"-?\d+\.(\d+)")
TIME_FORM = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?")


def _form_example(node: Mapping[str, Any]) -> str | None:
    """A string's first example when it is a form drawn as such (a decimal, an ISO time)."""
    examples = node.get("examples")
    first = examples[0] if isinstance(examples, list) and examples else None
    if isinstance(first, str) and any(f.fullmatch(first) for f in (DECIMAL_FORM, TIME_FORM)):
        return first
    return None


def _between(node: Mapping[str, Any], whole: bool, at: str) -> Between:
    """The range a number's bounds allow (an exclusive bound one step in: 1 for an integer,
    a millionth of the span for a number)."""
    low, high = -(2.0**52), 2.0**52
    for key, (lower, exclusive) in _BOUNDS.items():
        if key not in node:
            continue
        bound = node[key]
        if isinstance(bound, bool) or not isinstance(bound, int | float):
            raise SchemaError(f"{at}: {key}={bound!r} is not a number")
        step = (1 if whole else 1e-6 * max(1.0, abs(bound))) if exclusive else 0
        if lower:
            low = max(low, bound + step)
        else:
            high = min(high, bound - step)
    if whole:
        low, high = float(math.ceil(low)), float(math.floor(high))
    if low > high:
        raise SchemaError(f"{at}: no number lies within its bounds")
    return Between(low, high, whole)


def _types(node: Mapping[str, Any], at: str) -> list[str]:
    given = node.get("type", "object" if "properties" in node else None)
    types = given if isinstance(given, list) else [given]
    known = {"object", "array", "string", "integer", "number", "boolean", "null"}
    if not types or any(t not in known for t in types):
        raise SchemaError(f"{at}: type {given!r} is not drawn: give one of {sorted(known)}")
    return [str(t) for t in types]


def _resolved(node: Any, root: Mapping[str, Any], at: str) -> Mapping[str, Any]:
    """``node``, following a local ``$ref`` (several in a row, at most 32)."""
    for _ in range(32):
        if not isinstance(node, Mapping):
            raise SchemaError(f"{at}: {node!r} is not a schema: give an object")
        ref = node.get("$ref")
        if ref is None:
            return node
        if not isinstance(ref, str) or not ref.startswith("#/"):
            raise SchemaError(f"{at}: $ref {ref!r} is not local: inline it or use #/$defs/...")
        target: Any = root
        for part in ref[2:].split("/"):
            if not isinstance(target, Mapping) or part not in target:
                raise SchemaError(f"{at}: $ref {ref!r} points at nothing in the schema")
            target = target[part]
        node = target
    raise SchemaError(f"{at}: $refs that never end in a schema")
