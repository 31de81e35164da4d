"""A recorded sample as the workload: records exported from a real topic, replayed by the
run's producers at the configured rate.

A sample is a file of key/value records — JSON lines (``{"key": text or null, "value": text or
null, "headers": {name: text}}``, as ``kcat -J`` or a console consumer exports them) or Parquet
with binary or text ``key`` and ``value`` columns (and ``headers`` as in a run's own
``topic.parquet``). Its keys are remapped onto the run's key space, keeping the sample's own
pattern of updates, deletes and hot keys: the sample's keys ranked by how often they occur,
the key of rank ``r`` becomes the sample's key of rank ``r mod keys``. Each writer replays the
sample in order, cyclically, from a place its seed draws. The file is pinned by its SHA-256 in
``test.json``: a replay of a run whose sample changed is refused.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq

from sealcheck.core.records import NewRecord


class SampleError(ValueError):
    """A sample that cannot be read: the message names the file, the line or column, and what
    to give instead."""


@dataclass(frozen=True)
class Sample:
    """A sample's records, in the file's order, and its keys by rank (most frequent first)."""

    records: Sequence[NewRecord]
    ranked: Sequence[bytes]

    def replay(self, seed: int, keys: int) -> Iterator[NewRecord]:
        """One writer's endless replay: from a place ``seed`` draws, in order, cyclically,
        each key remapped onto ``keys`` keys (rank ``r`` -> the sample's key of rank
        ``r mod keys``)."""
        rank = {k: i for i, k in enumerate(self.ranked)}
        at = random.Random(seed).randrange(len(self.records))
        while True:
            r = self.records[at]
            key = None if r.key is None else self.ranked[rank[r.key] % keys]
            yield NewRecord(key, r.value, r.headers)
            at = (at + 1) % len(self.records)


def digest(path: Path) -> str:
    """The file's SHA-256, hex."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def load_sample(path: Path) -> Sample:
    """The sample in ``path`` (``.jsonl``/``.json`` lines, or ``.parquet``); a
    :class:`SampleError` naming what is wrong."""
    if not path.is_file():
        raise SampleError(f"sample {str(path)!r} is not a file: give a JSON-lines or Parquet file")
    if path.suffix == ".parquet":
        records = _parquet(path)
    elif path.suffix in (".jsonl", ".json", ".ndjson"):
        records = _json_lines(path)
    else:
        raise SampleError(f"sample {str(path)!r}: name it .jsonl (JSON lines) or .parquet")
    if not records:
        raise SampleError(f"sample {str(path)!r} holds no records")
    counts = Counter(r.key for r in records if r.key is not None)
    first: dict[bytes, int] = {}
    for i, r in enumerate(records):
        if r.key is not None:
            first.setdefault(r.key, i)
    ranked = sorted(counts, key=lambda k: (-counts[k], first[k]))
    return Sample(tuple(records), tuple(ranked))


def _bytes(value: object, where: str) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    raise SampleError(f"{where} is {type(value).__name__}: give text, bytes or null")


def _json_lines(path: Path) -> list[NewRecord]:
    out = []
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                doc = json.loads(line)
            except json.JSONDecodeError:
                raise SampleError(f"sample {path.name} line {n} is not JSON") from None
            if not isinstance(doc, dict) or "value" not in doc:
                raise SampleError(
                    f'sample {path.name} line {n}: give an object with "key" and "value"'
                )
            where = f"sample {path.name} line {n}"
            heads = doc.get("headers") or {}
            headers = tuple(
                (str(k), _bytes(v, f"{where} header {k!r}") or b"") for k, v in dict(heads).items()
            )
            out.append(
                NewRecord(
                    _bytes(doc.get("key"), f"{where} key"),
                    _bytes(doc["value"], f"{where} value"),
                    headers,
                )
            )
    return out


def _parquet(path: Path) -> list[NewRecord]:
    table = pq.read_table(path)
    missing = {"key", "value"} - set(table.column_names)
    if missing:
        raise SampleError(f"sample {path.name} lacks the column(s) {sorted(missing)}")
    keys, values = table.column("key").to_pylist(), table.column("value").to_pylist()
    heads = (
        table.column("headers").to_pylist()
        if "headers" in table.column_names
        else [None] * len(keys)
    )
    return [
        NewRecord(
            _bytes(k, f"sample {path.name} key"),
            _bytes(v, f"sample {path.name} value"),
            _parquet_headers(hs, f"sample {path.name} row {i} headers"),
        )
        for i, (k, v, hs) in enumerate(zip(keys, values, heads, strict=True))
    ]


def _parquet_headers(cell: Sequence[object] | None, where: str) -> tuple[tuple[str, bytes], ...]:
    """A ``headers`` cell: a list of {name, value} structs (a run's ``topic.parquet``)."""
    found = []
    for h in cell or ():
        if not isinstance(h, dict) or not isinstance(h.get("name"), str):
            raise SampleError(
                f"{where}: {h!r} is not a header: give a list of structs with a text `name` "
                "and a binary `value`, as a run's topic.parquet holds them"
            )
        found.append((h["name"], _bytes(h.get("value"), where) or b""))
    return tuple(found)
