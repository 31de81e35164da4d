"""What the checkers judge, loaded from a run directory: data only, no servers, no Spark.

A run directory holds (written by the harness; see ``docs/architecture.md``):

* ``topic.parquet`` — the input log: ``partition, offset, key, value`` (key/value binary, null
  for a null key / a tombstone);
* ``persist/updates.parquet`` — every persisted update: ``collection, key, value, ts, diff``;
  ``persist/frontiers.json`` — ``{collection: {"upper": u, "since": s}}``;
  (or ``persist/store.db``, a SQLite store, exported to the two files above on first load);
* ``history.jsonl`` — the history (optional: without it completeness cannot check acks).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from checkers.frames import change_points, h
from checkers.history import History
from checkers.replay import (
    assign_steps,
    binding_ranges,
    classify,
    data_changes,
    error_changes,
    positioned,
    step_winners,
)

TOPIC_SCHEMA = pl.Schema(
    {
        "partition": pl.Int64,
        "offset": pl.Int64,
        "key": pl.Binary,
        "value": pl.Binary,
    }
)
UPDATES_SCHEMA = pl.Schema(
    {
        "collection": pl.String,
        "key": pl.Binary,
        "value": pl.Binary,
        "ts": pl.Int64,
        "diff": pl.Int64,
    }
)


Frame = pl.DataFrame | pl.LazyFrame


def _row(frame: Frame, i: int) -> dict[str, Any]:
    """Row ``i`` of a frame that may be a lazy scan (reads only what it needs)."""
    if isinstance(frame, pl.DataFrame):
        return frame.row(i, named=True)
    return frame.slice(i, 1).collect().row(0, named=True)


@dataclass
class RunData:
    """Everything a checker may read.

    ``topic`` (``partition, offset, key, value``) and ``updates`` (``collection, key, value,
    ts, diff``) hold bytes and may be lazy scans of the run's Parquet files. Checkers read the
    narrow hashed frames derived from them once (:meth:`classified`, :meth:`change_points`,
    :meth:`winners`, :meth:`acked`); bytes are fetched row by row only for explanations.
    """

    topic: Frame
    updates: Frame
    uppers: dict[str, int]
    sinces: dict[str, int]
    history: History

    _memo: dict[str, pl.DataFrame] = field(default_factory=dict, repr=False, compare=False)
    #: records bound at sealed steps (set by :meth:`winners`)
    bound_records: int = field(default=0, repr=False, compare=False)

    def prepare(self) -> None:
        """Read every input now (so that loading and judging can be timed apart)."""
        self.acked()
        self.classified()
        for name in ("bindings", "data", "errors"):
            self.change_points(name)

    def change_points(self, name: str) -> pl.DataFrame:
        """:func:`checkers.frames.change_points` of a collection's updates below its upper:
        ``kh, vh, ts, diff, mult, row`` (``row`` indexes :attr:`updates`). Computed once."""
        memo = f"cp:{name}"
        if memo not in self._memo:
            upper = self.uppers.get(name, 0)
            sealed = (
                self.updates.lazy()
                .with_row_index("row")
                .filter((pl.col("collection") == name) & (pl.col("ts") < upper))
                .select("row", h("key").alias("kh"), h("value").alias("vh"), "ts", "diff")
                .collect(engine="streaming")
            )
            self._memo[memo] = change_points(sealed, self.sinces.get(name, 0))
        return self._memo[memo]

    def classified(self) -> pl.DataFrame:
        """The records of :func:`checkers.replay.classify` (computed once)."""
        if "classified" not in self._memo:
            self._memo["classified"], self._memo["record_errors"] = classify(self.topic)
        return self._memo["classified"]

    def record_errors(self) -> pl.DataFrame:
        """The errors of :func:`checkers.replay.classify`: ``row, evh, skh`` (computed once)."""
        self.classified()
        return self._memo["record_errors"]

    def acked(self) -> pl.DataFrame:
        """The acknowledged writes in history order, as ``pos`` (:func:`checkers.replay.
        packed` partition and offset) and ``full`` (a hash of position, key and value)."""
        if "acked" not in self._memo:
            acked = (
                self.history.acked.lazy()
                .select(
                    pl.col("partition").cast(pl.Int64),
                    pl.col("offset").cast(pl.Int64),
                    h("key").alias("kh"),
                    h("value").alias("vh"),
                )
                .collect(engine="streaming")
            )
            self._memo["acked"] = positioned(acked, "kh", "vh")
        return self._memo["acked"]

    def winners(self) -> pl.DataFrame:
        """:func:`checkers.replay.step_winners` of the records bound at sealed steps (computed
        once). ``bound_records`` counts those records."""
        if "winners" not in self._memo:
            sealed = min(self.uppers.get("data", 0), self.uppers.get("bindings", 0))
            ranges = binding_ranges(self.collection("bindings"), sealed)
            step = assign_steps(self.classified(), ranges)
            self.bound_records = step.len() - step.null_count()
            since = max(self.sinces.values(), default=0)
            self._memo["winners"] = step_winners(self.classified(), step, since)
        return self._memo["winners"]

    def model_changes(self, name: str) -> pl.DataFrame:
        """The winners as changes of ``data`` or ``errors`` (:func:`checkers.replay.
        data_changes` / :func:`checkers.replay.error_changes`)."""
        if name == "data":
            return data_changes(self.winners())
        return error_changes(self.winners(), self.record_errors())

    def lookup(
        self, name: str, kh: int, vh: int | None = None
    ) -> tuple[bytes | None, bytes | None]:
        """The key (and value) bytes behind hashes of a collection's update, for people."""
        rows = self.change_points(name).filter(pl.col("kh") == kh)
        if vh is not None:
            rows = rows.filter(pl.col("vh") == vh)
        if rows.height == 0:
            return None, None
        update = self.update_row(int(rows["row"][0]))
        return update["key"], (update["value"] if vh is not None else None)

    def update_row(self, i: int) -> dict[str, Any]:
        """Persisted update ``i`` with its bytes."""
        return _row(self.updates, i)

    def topic_row(self, i: int) -> dict[str, Any]:
        """Input record ``i`` with its bytes."""
        return _row(self.topic, i)

    def ack_rows(self, indices: list[int]) -> dict[int, dict[str, Any]]:
        """Acknowledged writes by position in history order, with their bytes (one pass over
        the history however many are asked for)."""
        wanted = pl.Series(indices, dtype=pl.UInt32).implode()
        rows = (
            self.history.acked.lazy()
            .with_row_index("i")
            .filter(pl.col("i").is_in(wanted))
            .collect(engine="streaming")
        )
        return {int(r["i"]): r for r in rows.iter_rows(named=True)}

    def collection(self, name: str) -> pl.DataFrame:
        """The updates of one collection with their bytes (``key, value, ts, diff``): for the
        small ones (``bindings``, ``errors``). Read once: several checkers need them."""
        memo = f"collection:{name}"
        if memo not in self._memo:
            self._memo[memo] = (
                self.updates.lazy()
                .filter(pl.col("collection") == name)
                .drop("collection")
                .collect(engine="streaming")
            )
        return self._memo[memo]

    def log_end(self) -> dict[int, int]:
        """Per partition, one past the last offset in the dumped topic."""
        ends = self.classified().group_by("partition").agg(pl.col("offset").max() + 1)
        return {int(p): int(o) for p, o in ends.iter_rows()}


class RunInputError(ValueError):
    """A run directory lacks a file the checkers need; the message says which and why."""


_EXPORT_SCHEMA = pa.schema(
    [
        ("collection", pa.string()),
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("ts", pa.int64()),
        ("diff", pa.int64()),
    ]
)


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


def load_run(run_dir: Path) -> RunData:
    """Open a run directory (exporting a SQLite store to Parquet the first time).

    The big inputs stay lazy scans; :meth:`RunData.prepare` (or the first checker) reads them.
    """
    topic_path = run_dir / "topic.parquet"
    if not topic_path.exists():
        raise RunInputError(
            f"{topic_path} is missing: the harness dumps the topic there after the final phase; "
            "a run that died before it cannot be checked for sealed state"
        )
    persist = run_dir / "persist"
    if not (persist / "updates.parquet").exists():
        db = persist / "store.db"
        if not db.exists():
            raise RunInputError(f"neither {persist / 'updates.parquet'} nor {db} exists")
        export_sqlite(db, persist)
    topic = pl.scan_parquet(topic_path).cast(TOPIC_SCHEMA)
    updates = pl.scan_parquet(persist / "updates.parquet").cast(UPDATES_SCHEMA)
    frontiers = json.loads((persist / "frontiers.json").read_text())
    history_path = run_dir / "history.jsonl"
    history = History.load(history_path) if history_path.exists() else History.empty()
    return RunData(
        topic,
        updates,
        {c: int(f["upper"]) for c, f in frontiers.items()},
        {c: int(f["since"]) for c, f in frontiers.items()},
        history,
    )
