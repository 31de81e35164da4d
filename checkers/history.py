"""The history: JSON lines written by the harness as a run happens (format in
``docs/architecture.md``), and lookups that give anomalies their context."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
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


_WRITE = '"f": ?"write"'


def _complete_prefix(path: Path, block: int = 1 << 16) -> int:
    """Bytes up to and including the last newline (a torn last line is excluded)."""
    size = path.stat().st_size
    with open(path, "rb") as fh:
        end = size
        while end > 0:
            start = max(0, end - block)
            fh.seek(start)
            chunk = fh.read(end - start)
            nl = chunk.rfind(b"\n")
            if nl >= 0:
                return start + nl + 1
            end = start
    return 0


BYTES_SCHEMA = pl.Schema(
    {"partition": pl.Int64, "offset": pl.Int64, "key": pl.Binary, "value": pl.Binary}
)


def _acked_writes(ops: pl.LazyFrame) -> pl.LazyFrame:
    """The ``ok`` writes of parsed ops as ``partition, offset, key, value`` (bytes)."""
    v = pl.col("value")
    return ops.filter((pl.col("f") == "write") & (pl.col("type") == "ok")).select(
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


@dataclass
class History:
    """Acknowledged writes as a frame of bytes, everything else as a list of ops.

    ``acked`` (``partition, offset, key, value``) may be lazy: a loaded history is parsed by
    polars when a checker first needs the writes, hashed as it streams by.
    """

    acked: pl.DataFrame | pl.LazyFrame
    ops: list[dict[str, Any]] = field(default_factory=list)

    @staticmethod
    def empty() -> History:
        """A run without a history (e.g. a store judged on its own)."""
        return History(pl.DataFrame(schema=BYTES_SCHEMA))

    @staticmethod
    def load(path: Path) -> History:
        """Read ``history.jsonl``; a torn last line (crashed harness) is skipped.

        Writes (most of a history) are parsed by polars straight from the file, lazily; the
        other ops are parsed with ``json`` now, to keep their full values.
        """
        complete = _complete_prefix(path)
        if complete == 0:
            return History.empty()
        # Lines that are not writes (few), found by polars without parsing every line.
        others = (
            pl.scan_csv(
                path,
                has_header=False,
                separator="\x00",  # never in JSON text: each line is one field
                quote_char=None,
                schema={"line": pl.String},
            )
            .filter(~pl.col("line").str.contains(_WRITE))
            .collect()["line"]
        )
        ops: list[dict[str, Any]] = []
        for line in others.to_list():
            try:
                ops.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # the line being written when the harness died
        if complete < path.stat().st_size:  # torn last line: parse only the complete prefix
            with open(path, "rb") as fh:
                prefix = io.BytesIO(fh.read(complete))
            parsed = pl.read_ndjson(prefix, schema=WRITE_SCHEMA).lazy()
            return History(_acked_writes(parsed).collect(), ops)
        return History(_acked_writes(pl.scan_ndjson(path, schema=WRITE_SCHEMA)), ops)

    def seal_times(self) -> tuple[list[int], list[int]]:
        """Observed ``data`` uppers over time: (times, uppers), in history order."""
        times, uppers = [], []
        for op in self.ops:
            if op.get("f") == "uppers" and isinstance(op.get("value"), dict):
                times.append(int(op["time"]))
                uppers.append(int(op["value"].get("data", 0)))
        return times, uppers

    def context_for_step(self, step: int | None) -> dict[str, Any]:
        """The last nemesis op and pipeline start before ``step`` was first seen sealed."""
        times, uppers = self.seal_times()
        when: int | None = None
        if step is not None:
            for t, u in zip(times, uppers, strict=True):
                if u > step:
                    when = t
                    break
        out: dict[str, Any] = {}
        if when is not None:
            out["sealed_by_ns"] = when
        limit = when if when is not None else 1 << 62
        for op in self.ops:
            if int(op.get("time", 0)) > limit:
                break
            if op.get("process") == "nemesis":
                out["last_nemesis"] = _brief(op)
            elif op.get("f") in ("pipeline-start", "pipeline-exit"):
                out[f"last_{op['f'].replace('-', '_')}"] = _brief(op)
        return out


def _brief(op: dict[str, Any]) -> dict[str, Any]:
    return {k: op.get(k) for k in ("index", "time", "type", "f", "value")}
