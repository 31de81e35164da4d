"""Scanning a JSON-lines file by bytes and lines (for :mod:`sealcheck.rundir.history`): the
complete prefix before a torn last line, line counts and offsets, and each line as a polars
string. (The first line that does not fit the history's schema:
:func:`sealcheck.rundir.schema.first_unreadable`.)"""

from __future__ import annotations

import io
from pathlib import Path

import polars as pl


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
