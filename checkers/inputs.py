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
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from checkers.history import History

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


@dataclass
class RunData:
    """Everything a checker may read."""

    topic: pl.DataFrame
    updates: pl.DataFrame
    uppers: dict[str, int]
    sinces: dict[str, int]
    history: History

    _memo: dict[str, pl.DataFrame] = field(default_factory=dict, repr=False, compare=False)
    #: records bound at sealed steps (set by :meth:`winners`)
    bound_records: int = field(default=0, repr=False, compare=False)

    def sealed(self, name: str) -> pl.DataFrame:
        """A collection's updates below its upper as ``row, kh, vh, ts, diff`` — hashes, no
        bytes (``row`` indexes :attr:`updates` for the bytes). Computed once."""
        memo = f"sealed:{name}"
        if memo not in self._memo:
            from checkers.frames import h

            upper = self.uppers.get(name, 0)
            self._memo[memo] = (
                self.updates.lazy()
                .with_row_index("row")
                .filter((pl.col("collection") == name) & (pl.col("ts") < upper))
                .select("row", h("key").alias("kh"), h("value").alias("vh"), "ts", "diff")
                .collect()
            )
        return self._memo[memo]

    def change_points(self, name: str) -> pl.DataFrame:
        """:func:`checkers.frames.change_points` of a collection's sealed updates (computed
        once, shared by the checkers that need it)."""
        memo = f"cp:{name}"
        if memo not in self._memo:
            from checkers.frames import change_points

            self._memo[memo] = change_points(self.sealed(name), self.sinces.get(name, 0))
        return self._memo[memo]

    def classified(self) -> pl.DataFrame:
        """:func:`checkers.frames.classify` of the topic (computed once)."""
        if "classified" not in self._memo:
            from checkers.frames import classify

            self._memo["classified"] = classify(self.topic)
        return self._memo["classified"]

    def winners(self) -> pl.DataFrame:
        """:func:`checkers.frames.step_winners` of the records bound at sealed steps (computed
        once; the intermediate frame is not kept). ``bound_records`` counts those records."""
        if "winners" not in self._memo:
            from checkers.frames import assign_steps, binding_ranges, step_winners

            sealed = min(self.uppers.get("data", 0), self.uppers.get("bindings", 0))
            ranges = binding_ranges(self.collection("bindings"), sealed)
            stepped = assign_steps(self.classified(), ranges)
            self.bound_records = int(stepped["step"].is_not_null().sum())
            since = max(self.sinces.values(), default=0)
            self._memo["winners"] = step_winners(stepped, since)
        return self._memo["winners"]

    def lookup(
        self, name: str, kh: int, vh: int | None = None
    ) -> tuple[bytes | None, bytes | None]:
        """The key (and value) bytes behind hashes of a collection's update, for people."""
        rows = self.sealed(name).filter(pl.col("kh") == kh)
        if vh is not None:
            rows = rows.filter(pl.col("vh") == vh)
        if rows.height == 0:
            return None, None
        update = self.updates.row(int(rows["row"][0]), named=True)
        return update["key"], (update["value"] if vh is not None else None)

    def collection(self, name: str) -> pl.DataFrame:
        """The updates of one collection (``key, value, ts, diff``)."""
        return self.updates.filter(pl.col("collection") == name).drop("collection")

    def log_end(self) -> dict[int, int]:
        """Per partition, one past the last offset in the dumped topic."""
        ends = self.topic.group_by("partition").agg(pl.col("offset").max() + 1)
        return {int(p): int(o) for p, o in ends.iter_rows()}


class RunInputError(ValueError):
    """A run directory lacks a file the checkers need; the message says which and why."""


def export_sqlite(db: Path, out_dir: Path, batch: int = 500_000) -> None:
    """Copy a SQLite persist store to ``updates.parquet`` + ``frontiers.json`` in ``out_dir``."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        frontiers = {
            c: {"upper": int(u), "since": int(s)}
            for c, u, s in con.execute("SELECT collection, upper, since FROM frontiers")
        }
        schema = pa.schema(
            [
                ("collection", pa.string()),
                ("key", pa.binary()),
                ("value", pa.binary()),
                ("ts", pa.int64()),
                ("diff", pa.int64()),
            ]
        )
        tmp = out_dir / "updates.parquet.tmp"
        with pq.ParquetWriter(tmp, schema) as writer:
            cur = con.execute("SELECT collection, key, val, ts, diff FROM updates")
            while rows := cur.fetchmany(batch):
                cols = list(zip(*rows, strict=True))
                writer.write_table(pa.Table.from_arrays([pa.array(c) for c in cols], schema=schema))
        tmp.replace(out_dir / "updates.parquet")
        (out_dir / "frontiers.json").write_text(json.dumps(frontiers, indent=1, sort_keys=True))
    finally:
        con.close()


def load_run(run_dir: Path) -> RunData:
    """Load a run directory (exporting a SQLite store to Parquet the first time)."""
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
    topic = pl.read_parquet(topic_path).cast(TOPIC_SCHEMA)
    updates = pl.read_parquet(persist / "updates.parquet").cast(UPDATES_SCHEMA)
    updates = updates.with_columns(pl.col("collection").cast(pl.Categorical))
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
