"""The files of a run directory that the checkers read, and proof that they are the ones the
run produced.

* The export format every store backend is copied into (``persist/updates.parquet`` +
  ``persist/frontiers.json``), and the export of a SQLite store, which records what it was made
  from in ``persist/export.json`` so a stale export is never judged.
* The *manifest*: rows and SHA-256 of each input file. The harness records it in the history's
  final op (:data:`checkers.history.FINAL_OP`) right after the dumps; :func:`verify` recomputes
  it before anything is judged and names every file that no longer matches.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

#: Every file a checker may read, relative to the run directory, in the order they are listed.
INPUT_FILES = (
    "topic.parquet",
    "persist/store.db",
    "persist/updates.parquet",
    "persist/frontiers.json",
)
EXPORT_PROVENANCE = "persist/export.json"

_EXPORT_SCHEMA = pa.schema(
    [
        ("collection", pa.string()),
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("ts", pa.int64()),
        ("diff", pa.int64()),
    ]
)


def sha256(path: Path) -> str:
    """The SHA-256 of a file's bytes, in hex."""
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def _rows(path: Path) -> int:
    if path.suffix == ".parquet":
        return int(pq.ParquetFile(path).metadata.num_rows)
    if path.suffix == ".db":
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return int(con.execute("SELECT count(*) FROM updates").fetchone()[0])
        finally:
            con.close()
    doc = json.loads(path.read_text())
    return len(doc) if isinstance(doc, dict | list) else 1


def describe(run_dir: Path) -> dict[str, dict[str, Any]]:
    """Rows, bytes and SHA-256 of every input file present in ``run_dir`` (the manifest)."""
    out: dict[str, dict[str, Any]] = {}
    for rel in INPUT_FILES:
        path = run_dir / rel
        if path.exists():
            out[rel] = {"rows": _rows(path), "bytes": path.stat().st_size, "sha256": sha256(path)}
    return out


def verify(run_dir: Path, recorded: dict[str, Any]) -> list[str]:
    """Every recorded input that is missing or differs now (empty: all match)."""
    problems: list[str] = []
    for rel, want in sorted(recorded.items()):
        path = run_dir / rel
        if not path.exists():
            problems.append(
                f"{rel} is missing, but the history records it ({want.get('rows')} rows): "
                "restore it from the run, or re-run the test"
            )
            continue
        have = sha256(path)
        if have != want.get("sha256"):
            problems.append(
                f"{rel} is not the file the run produced (SHA-256 {have[:12]}… now, "
                f"{str(want.get('sha256'))[:12]}… recorded; {_rows(path)} rows now, "
                f"{want.get('rows')} recorded): judging it would judge other data; restore "
                "the original or re-run the test"
            )
    return problems


def write_export(
    frontiers: dict[str, dict[str, int]],
    batches: Iterable[Sequence[tuple[Any, ...]]],
    out_dir: Path,
) -> None:
    """Write a store's export: ``updates.parquet`` from batches of ``(collection, key, value,
    ts, diff)`` rows (atomically replaced) and ``frontiers.json``. Every backend's export
    goes through here, so the checkers read one format."""
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = out_dir / "updates.parquet.tmp"
    with pq.ParquetWriter(tmp, _EXPORT_SCHEMA) as writer:
        for rows in batches:
            cols = list(zip(*rows, strict=True))
            arrays = [pa.array(c) for c in cols]
            writer.write_table(pa.Table.from_arrays(arrays, schema=_EXPORT_SCHEMA))
    tmp.replace(out_dir / "updates.parquet")
    (out_dir / "frontiers.json").write_text(json.dumps(frontiers, indent=1, sort_keys=True))


def _fetch_batches(cur: Any, batch: int) -> Iterator[Sequence[tuple[Any, ...]]]:
    while rows := cur.fetchmany(batch):
        yield rows


def export_sqlite(db: Path, out_dir: Path, batch: int = 500_000) -> None:
    """Copy a SQLite persist store to ``updates.parquet`` + ``frontiers.json`` in ``out_dir``."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        frontiers = {
            c: {"upper": int(u), "since": int(s)}
            for c, u, s in con.execute("SELECT collection, upper, since FROM frontiers")
        }
        cur = con.execute("SELECT collection, key, val, ts, diff FROM updates")
        write_export(frontiers, _fetch_batches(cur, batch), out_dir)
    finally:
        con.close()


def ensure_export(run_dir: Path, db_digest: str) -> str | None:
    """Make ``persist/updates.parquet`` + ``frontiers.json`` the export of ``persist/store.db``
    (digest ``db_digest``): kept when ``persist/export.json`` says they were made from exactly
    that store and they are still the files it made, made again otherwise. Returns why they
    were made again (None when they were current or made for the first time)."""
    persist = run_dir / "persist"
    outputs = ("updates.parquet", "frontiers.json")
    try:
        prov = json.loads((run_dir / EXPORT_PROVENANCE).read_text())
        if not isinstance(prov, dict):
            prov = {}
    except (OSError, ValueError):
        prov = {}
    why: str | None = None
    first = not all((persist / name).exists() for name in outputs)
    if first:
        why = "first load"
    elif "sha256" not in prov:
        why = "updates.parquet does not say what it was exported from: exported store.db again"
    elif prov["sha256"] != db_digest:
        why = "updates.parquet was exported from another store.db: exported store.db again"
    elif any(prov.get("outputs", {}).get(n) != sha256(persist / n) for n in outputs):
        why = "updates.parquet or frontiers.json changed since the export: exported store.db again"
    if why is None:
        return None
    export_sqlite(persist / "store.db", persist)
    made = {n: sha256(persist / n) for n in outputs}
    doc = {"source": "store.db", "sha256": db_digest, "outputs": made}
    (run_dir / EXPORT_PROVENANCE).write_text(json.dumps(doc, indent=1) + "\n")
    return None if first else why
