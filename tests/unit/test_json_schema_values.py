"""JSON documents drawn from a job's JSON Schema (``JsonValues.from_schema``,
:mod:`sealcheck.formats.json_schema`): every property of its type, an enum's values only, a
``date-time`` an ISO time, a string's first example giving its form, null where a type allows
it (top level and nested, through ``$ref`` and ``anyOf``); what is not drawn is one line."""

from __future__ import annotations

import datetime as dt
import random
import re

import pytest

from sealcheck import Draw
from sealcheck.formats import JsonValues, SchemaError

SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["order_id"],
    "properties": {
        "order_id": {"type": "integer"},
        "status": {"enum": ["new", "paid", "shipped"]},
        "currency": {"const": "EUR"},
        "total": {"type": "string", "examples": ["12.99"]},
        "placed": {"type": "string", "format": "date-time"},
        "note": {"type": ["string", "null"]},
        "express": {"type": "boolean"},
        "lines": {"type": "array", "items": {"$ref": "#/$defs/line"}},
        "ship": {"anyOf": [{"$ref": "#/$defs/address"}, {"type": "null"}]},
    },
    "$defs": {
        "line": {"type": "object", "properties": {"sku": {"type": "string"},
                                                  "weight": {"type": "number"}}},
        "address": {"type": "object", "properties": {"city": {"type": "string"},
                                                     "floor": {"type": ["integer", "null"]}}},
    },
}  # fmt: skip


def docs(values: JsonValues, n: int = 400) -> list[dict]:
    return [values.draw(Draw(i % 7, "upsert", i, "w0", random.Random(i))) for i in range(n)]


def test_each_property_is_drawn_of_its_type_and_form() -> None:
    drawn = docs(JsonValues.from_schema(SCHEMA))
    assert all(set(d) == set(SCHEMA["properties"]) for d in drawn)
    assert all(isinstance(d["order_id"], int) and not isinstance(d["order_id"], bool)
               for d in drawn)  # fmt: skip
    assert {d["status"] for d in drawn} == {"new", "paid", "shipped"}
    assert {d["currency"] for d in drawn} == {"EUR"}
    assert all(re.fullmatch(r"-?\d+\.\d\d", d["total"]) for d in drawn)
    assert all(dt.datetime.fromisoformat(d["placed"]).utcoffset() == dt.timedelta(0)
               for d in drawn)  # fmt: skip
    assert all(d["placed"].endswith("Z") for d in drawn)
    assert all(isinstance(d["express"], bool) for d in drawn)
    lines = [line for d in drawn for line in d["lines"]]
    assert lines and all(set(x) == {"sku", "weight"} for x in lines)


def test_null_appears_where_the_type_allows_it_and_nowhere_else() -> None:
    drawn = docs(JsonValues.from_schema(SCHEMA))
    assert any(d["note"] is None for d in drawn) and any(d["note"] for d in drawn)
    assert any(d["ship"] is None for d in drawn)
    floors = [d["ship"]["floor"] for d in drawn if d["ship"] is not None]
    assert None in floors and any(isinstance(f, int) for f in floors)
    never = ("order_id", "status", "total", "placed", "express", "lines")
    assert all(d[name] is not None for d in drawn for name in never)


def test_the_same_draw_gives_the_same_bytes_and_the_text_form_is_read() -> None:
    values = JsonValues.from_schema(__import__("json").dumps(SCHEMA))
    a = values.encode(values.draw(Draw(3, "upsert", 9, "w1", random.Random(5))))
    b = values.encode(values.draw(Draw(3, "upsert", 9, "w1", random.Random(5))))
    assert a == b and values.decode(a)["order_id"] is not None


@pytest.mark.parametrize(
    ("schema", "fragment"),
    [
        ({"type": "array"}, "not of an object"),
        ({"properties": {"a": {"type": "string", "pattern": "^x"}}},
         "#/properties/a: pattern is not drawn: leave it out of the schema given to from_schema"),
        ({"properties": {"a": {"type": "string", "pattern": "^x", "examples": ["xy"]}}},
         "pattern is not drawn"),  # an example that is no form Sealcheck draws in
        ({"properties": {"a": {"type": "integer", "multipleOf": 5}}}, "multipleOf is not drawn"),
        ({"properties": {"a": {"type": "integer", "minimum": 3, "maximum": 2}}},
         "no number lies within its bounds"),
        ({"properties": {"a": {"type": "number", "minimum": "0"}}}, "minimum='0' is not a number"),
        ({"properties": {"a": {"$ref": "#/$defs/nope"}}}, "points at nothing"),
        ({"properties": {"a": {"$ref": "other.json#/x"}}}, "is not local"),
        ({"properties": {"a": {"anyOf": [{"type": "string"}, {"type": "integer"}]}}},
         "anyOf of 2 schemas"),
        ({"properties": {"a": {"type": ["string", "integer"]}}}, "give one type"),
        ({"properties": {"a": {"type": "decimal"}}}, "type 'decimal' is not drawn"),
        ({"properties": {"a": {"$ref": "#/$defs/a"}}, "$defs": {"a": {"$ref": "#/$defs/a"}}},
         "never end"),
    ],
)  # fmt: skip
def test_what_is_not_drawn_is_one_line_naming_where(schema: dict, fragment: str) -> None:
    with pytest.raises(ValueError) as info:
        JsonValues.from_schema(schema)
    assert fragment in str(info.value) and "\n" not in str(info.value)


def test_bounds_are_drawn_within_and_a_form_example_covers_its_pattern() -> None:
    """``minimum``/``maximum`` (and the exclusive ones) hold every draw, the bounds among the
    edges; a ``pattern`` beside an example of a form Sealcheck draws in (a decimal, an ISO
    time) is that form's."""
    schema = {
        "type": "object",
        "properties": {
            "qty": {"type": "integer", "minimum": 1, "exclusiveMaximum": 100},
            "weight": {"type": "number", "exclusiveMinimum": 0, "maximum": 2.5},
            "total": {"type": "string", "pattern": "^-?[0-9]+[.][0-9]{2}$",
                      "examples": ["12.99"]},
        },
    }  # fmt: skip
    drawn = docs(JsonValues.from_schema(schema), 600)
    qty = [d["qty"] for d in drawn]
    assert all(isinstance(q, int) and 1 <= q <= 99 for q in qty) and {1, 99} <= set(qty)
    assert all(0 < d["weight"] <= 2.5 for d in drawn)
    assert all(re.fullmatch(schema["properties"]["total"]["pattern"], d["total"])
               for d in drawn)  # fmt: skip
    assert JsonValues.from_schema is not None and issubclass(SchemaError, ValueError)
