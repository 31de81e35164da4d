"""Scanning a JSON-lines file by bytes and lines (for :mod:`sealcheck.rundir.history`): the
complete prefix before a torn last line, line counts and offsets, each line as a polars
string, and the history's ops among them (:func:`read_ops`: every line that is not a write,
parsed, up to the first line that is not an op where it stands: :class:`BadLine`). (The first
line that does not fit the history's schema: :func:`sealcheck.rundir.schema.first_unreadable`.)
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

#: a write op's line (read by polars, not parsed here)
_WRITE = '"f": ?"write"'
#: the index the writer puts first on every line
_INDEX = r'^\{"index": ?(\d{1,18}),'


def complete_prefix(path: Path, block: int = 1 << 16) -> int:
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


def numbered_lines(source: Path | io.BytesIO) -> pl.LazyFrame:
    """Each line of a JSON-lines file as one string field (``line``), numbered from 1."""
    reader = dict(
        has_header=False,
        separator="\x00",  # never in JSON text: each line is one field
        quote_char=None,
        schema={"line": pl.String},
    )
    frame = (
        pl.scan_csv(source, **reader)  # type: ignore[arg-type]
        if isinstance(source, Path)
        else pl.read_csv(source, **reader).lazy()  # type: ignore[arg-type]
    )
    return frame.with_row_index("n", offset=1)


def offset_after_line(path: Path, line: int) -> int:
    """The byte just after the newline that ends line ``line`` (numbered from 1)."""
    with open(path, "rb") as fh:
        for _ in range(line):
            fh.readline()
        return fh.tell()


def count_lines(path: Path, size: int, block: int = 1 << 24) -> int:
    """Newlines in the first ``size`` bytes of ``path``."""
    n = 0
    with open(path, "rb") as fh:
        while size > 0:
            chunk = fh.read(min(block, size))
            if not chunk:
                break
            n += chunk.count(b"\n")
            size -= len(chunk)
    return n


@dataclass(frozen=True)
class BadLine:
    """The first line of a history that is not an op where it stands (numbered from 1):
    ``why`` it is not an op at all, or, when it is one, the ``index`` it holds (a line cut
    out, repeated or overwritten before it)."""

    n: int
    why: str | None = None
    index: Any = None


Row = tuple[int, str | None, str | None, bool]


def read_ops(
    source: Path | io.BytesIO, is_final: Callable[[dict[str, Any]], bool]
) -> tuple[list[dict[str, Any]], int | None, BadLine | None]:
    """The ops of a history's complete lines that are not writes, in order, as JSON; the line
    of the first that ``is_final`` (None: none is); and the first line before it that is not
    an op where it stands (None: every one is; the ops read stop there). Lines after the final
    op are read only as far as they are ops.

    Polars picks the lines (their ``index`` checked against their line number in the same
    pass); bytes it cannot take as text (a NUL, bytes that are not UTF-8: not a history) are
    looked at line by line instead, to say which line."""
    try:
        rows: Iterator[Row] | list[Row] = _picked(source)
    except pl.exceptions.PolarsError:
        rows = _picked_slowly(source)
    ops: list[dict[str, Any]] = []
    final_at: int | None = None
    for n, line, not_text, misplaced in rows:
        found = _op(n, line, not_text, misplaced)
        if isinstance(found, BadLine):
            return ops, final_at, (found if final_at is None else None)
        ops.append(found)
        if final_at is None and is_final(found):
            final_at = n
    return ops, final_at, None


def _picked(source: Path | io.BytesIO) -> list[Row]:
    """Every line that is not a write or whose index is not its line number minus one."""
    index = pl.col("line").str.extract(_INDEX, 1).cast(pl.Int64, strict=False)
    bad = index.is_null() | (index != pl.col("n") - 1)
    picked = (
        numbered_lines(source)
        .with_columns(bad.alias("bad"))
        .filter(pl.col("bad") | ~pl.col("line").str.contains(_WRITE).fill_null(False))
        .collect(engine="streaming")
    )
    numbers, lines, flags = picked["n"].to_list(), picked["line"].to_list(), picked["bad"].to_list()
    return [(n, line, None, b) for n, line, b in zip(numbers, lines, flags, strict=True)]


def _picked_slowly(source: Path | io.BytesIO) -> Iterator[Row]:
    """:func:`_picked` line by line in Python, saying of a line that is not text why."""
    index, write = re.compile(_INDEX), re.compile(_WRITE)
    with open(source, "rb") if isinstance(source, Path) else io.BytesIO(source.getvalue()) as fh:
        for n, raw in enumerate(fh, start=1):
            body = raw.rstrip(b"\n")
            try:
                line = body.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield n, None, f"bytes that are not UTF-8 text at column {exc.start + 1}", True
                continue
            if "\x00" in line:
                yield n, None, f"a NUL byte at column {line.index(chr(0)) + 1}", True
                continue
            at = index.match(line)
            misplaced = at is None or int(at.group(1)) != n - 1
            if misplaced or not write.search(line):
                yield n, line, None, misplaced


def _op(
    n: int, line: str | None, not_text: str | None, misplaced: bool
) -> dict[str, Any] | BadLine:
    """Line ``n`` as an op, or why it is not one where it stands."""
    if not_text is not None:
        return BadLine(n, not_text)
    if not (line or "").strip():
        return BadLine(n, "an empty line")
    text = line or ""
    try:
        op = json.loads(text)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError is a ValueError
        return BadLine(n, f"{exc}: {text[:80]!r}")
    if not isinstance(op, dict) or type(op.get("index")) is not int:
        what = "an object with no whole-number index" if isinstance(op, dict) else "a JSON "
        what += "" if isinstance(op, dict) else type(op).__name__
        return BadLine(n, f"{what}: {text[:80]!r}")
    if misplaced:
        return BadLine(n, None, op["index"])
    return op
