"""The schema polars reads a history with (:mod:`sealcheck.rundir.history`): every line is read
against :data:`WRITE_SCHEMA` — only ``write`` ops' fields matter, but every op's ``value`` must
fit it — and the acknowledged writes come out as bytes (:data:`BYTES_SCHEMA`). Once a read has
failed, :func:`first_unreadable` names the first line that does not fit, and why.

Keys and values of writes are text when UTF-8, else hex in ``key_hex``/``value_hex``
(:func:`encode_bytes`); null is null.
"""

from __future__ import annotations

import io
import json
import math
from pathlib import Path
from typing import Any

import polars as pl

#: The fields of ``value`` the checkers read from ``write`` ops (others are ignored). Keys and
#: values are text when UTF-8, else hex in ``key_hex``/``value_hex``; null is null.
WRITE_SCHEMA = pl.Schema(
    [
        ("index", pl.Int64()),
        ("time", pl.Int64()),
        ("process", pl.String()),
        ("type", pl.String()),
        ("f", pl.String()),
        (
            "value",
            pl.Struct(
                {
                    "key": pl.String,
                    "value": pl.String,
                    "key_hex": pl.String,
                    "value_hex": pl.String,
                    "partition": pl.Int64,
                    "offset": pl.Int64,
                }
            ),
        ),
    ]
)

#: Acknowledged writes as the checkers read them.
BYTES_SCHEMA = pl.Schema(
    {
        "time": pl.Int64,
        "partition": pl.Int64,
        "offset": pl.Int64,
        "key": pl.Binary,
        "value": pl.Binary,
    }
)

_I64 = range(-(1 << 63), 1 << 63)


def acked_writes(ops: pl.LazyFrame) -> pl.LazyFrame:
    """The ``ok`` writes of parsed ops as ``time, partition, offset, key, value`` (bytes)."""
    v = pl.col("value")
    return ops.filter((pl.col("f") == "write") & (pl.col("type") == "ok")).select(
        "time",
        v.struct.field("partition"),
        v.struct.field("offset"),
        pl.coalesce(
            v.struct.field("key_hex").str.decode("hex"),
            v.struct.field("key").cast(pl.Binary),
        ).alias("key"),
        pl.coalesce(
            v.struct.field("value_hex").str.decode("hex"),
            v.struct.field("value").cast(pl.Binary),
        ).alias("value"),
    )


def read_acked(data: bytes) -> pl.DataFrame:
    """The acknowledged writes of history lines held in memory (raises polars' error when a
    line does not fit :data:`WRITE_SCHEMA`)."""
    return acked_writes(pl.read_ndjson(io.BytesIO(data), schema=WRITE_SCHEMA).lazy()).collect()


def encode_bytes(name: str, raw: bytes | None) -> dict[str, str | None]:
    """``{name: text}`` for UTF-8 bytes (or null), ``{name_hex: hex}`` otherwise."""
    if raw is None:
        return {name: None}
    try:
        return {name: raw.decode("utf-8")}
    except UnicodeDecodeError:
        return {f"{name}_hex": raw.hex()}


def _reads(data: bytes) -> bool:
    try:
        read_acked(data)
    except (pl.exceptions.PolarsError, OSError):
        return False
    return True


def first_unreadable(source: Path | io.BytesIO | bytes) -> tuple[int, str]:
    """The first line (numbered from 1) polars cannot read against :data:`WRITE_SCHEMA`, with
    why and how it starts; ``(0, ...)`` when every line reads. Slow (a binary search over
    prefixes, each read by polars): call it only once a read has failed."""
    if isinstance(source, Path):
        data = source.read_bytes()
    else:
        data = source.getvalue() if isinstance(source, io.BytesIO) else source
    ends, nl = [], data.find(b"\n")
    while nl >= 0:
        ends.append(nl + 1)
        nl = data.find(b"\n", nl + 1)
    if data and (not ends or ends[-1] < len(data)):
        ends.append(len(data))  # a last line without its newline
    if not ends or _reads(data):
        return 0, "every line reads against the history's schema"
    good, bad = 0, len(ends)  # the first `good` lines read; the first `bad` lines do not
    while bad - good > 1:
        mid = (good + bad) // 2
        if _reads(data[: ends[mid - 1]]):
            good = mid
        else:
            bad = mid
    line = data[ends[bad - 2] if bad > 1 else 0 : ends[bad - 1]].rstrip(b"\r\n")
    return bad, f"{why_unreadable(line)}: {line[:120].decode('utf-8', 'replace')!r}"


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"{text} is out of range of a double")
    return number


def _not_int(value: Any) -> bool:
    return value is not None and (type(value) is not int or value not in _I64)


def why_unreadable(line: bytes) -> str:
    """Why one history line does not fit :data:`WRITE_SCHEMA` (as far as can be said without
    polars: else "polars cannot read it")."""
    try:
        op = json.loads(line, parse_constant=_no_constant, parse_float=_finite)
    except RecursionError:
        return "its JSON is nested too deeply to read"
    except ValueError as exc:
        return f"not JSON ({exc})"
    if not isinstance(op, dict):
        return "not a JSON object"
    for name in ("index", "time"):
        if _not_int(op.get(name)):
            return f"its {name} is {op[name]!r}, not a 64-bit integer"
    value = op.get("value")
    if value is not None and not isinstance(value, dict):
        return f"its value is {type(value).__name__}, not an object or null"
    for name in ("partition", "offset"):
        if value is not None and _not_int(value.get(name)):
            return f"its value's {name} is {value[name]!r}, not a 64-bit integer"
    return "polars cannot read it"
