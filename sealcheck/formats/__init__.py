"""Formats users' records come in, for a descriptor's ``record(draw)``
(:mod:`sealcheck.core.records`): values drawn from a schema to exercise a job — nulls where a
field may be null, boundary numbers and decimals, text beyond the Basic Multilingual Plane,
event times late and out of order — encoded as the job reads them.

* :class:`~sealcheck.formats.avro.AvroValues`: Avro values from a record schema (raw, or in
  Confluent's wire format with a fixed schema id: no registry needed);
* :class:`~sealcheck.formats.json_values.JsonValues`: JSON documents shaped like an example,
  or drawn from a JSON Schema (:meth:`~sealcheck.formats.json_values.JsonValues.from_schema`).
"""

from __future__ import annotations

from sealcheck.formats.avro import AvroValues
from sealcheck.formats.json_schema import SchemaError
from sealcheck.formats.json_values import JsonValues

__all__ = ["AvroValues", "JsonValues", "SchemaError"]
