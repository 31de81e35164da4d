"""What the checkers judge, loaded from a run directory: data only, no servers, no Spark.

A run directory holds (written by the harness; see ``docs/formats.md``):

* ``topic.parquet`` — the input log: ``partition, offset, key, value`` (key/value binary, null
  for a null key / a tombstone);
* ``export/updates.parquet`` — every persisted update: ``collection, key, value, ts, diff``;
  ``export/frontiers.json`` — ``{collection: {"upper": u, "since": s}}`` (``persist/`` in runs
  stored before the export was named ``export/``: :class:`sealcheck.rundir.files.Export`);
* ``history.jsonl`` — the history, whose final op records the rows and digest of each of the
  files above (:mod:`sealcheck.rundir.files`). Without it, or when a file differs from what it
  records, nothing is judged valid: :meth:`RunData.input_problems` says why (without it, a file
  that does not carry the run's id is not judged at all: :mod:`sealcheck.rundir.runid`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from sealcheck.checkers import kafka_lost
from sealcheck.checkers.frames import change_points, h, sort_runs
from sealcheck.checkers.replay import (
    assign_steps,
    binding_ranges,
    builtin_effects,
    changes,
    classify,
    error_bytes,
    reason_text,
    slot_bytes,
    step_winners,
)
from sealcheck.checkers.result import show
from sealcheck.checkers.schemas import TOPIC_SCHEMA
from sealcheck.checkers.steps import Steps
from sealcheck.rundir.history import History
from sealcheck.rundir.states import SAMPLES, StateRecord

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
    #: why the files judged cannot be trusted (stale, missing): nothing is judged then
    refusals: list[str] = field(default_factory=list)
    #: what was noticed while loading and is not a problem (a torn last line, a re-export)
    notes: list[str] = field(default_factory=list)
    #: snapshots of the store as of some steps (``collection, ts, key, value``), when the
    #: export offers a second reading of it (:attr:`sealcheck.rundir.files.Export.asof`);
    #: None otherwise
    asof: Frame | None = None
    #: step -> what the system calls it ("batch 3: data v7, errors v6"), when its export says
    #: (:func:`sealcheck.rundir.files.step_labels`); anomalies at a step carry it as
    # ``context["batch"]``
    step_names: dict[int, str] = field(default_factory=dict)
    #: which steps are judged one by one, which were captured, which changed after sealing
    #: (:mod:`sealcheck.checkers.steps`); ``updates`` already holds the captured steps compaction
    # merged
    steps: Steps = field(default_factory=Steps)
    #: what each record should do to the output, by the system's own mapping
    #: (:mod:`sealcheck.rundir.effects`: ``row, partition, offset, table, key, value``); None:
    #: the built-in record encoding
    stated: Frame | None = None
    #: collections the system says it does not keep (``"kept": false`` in the export's
    #: frontiers: an output observed from outside keeps no ``bindings``)
    unkept: frozenset[str] = frozenset()
    #: collections whose states the export says are not aligned with ``data``'s (``"aligned":
    #: false``: tables judged from untagged commits); ``prefix`` judges them alone
    unaligned: frozenset[str] = frozenset()
    #: the states of an output without bindings and the batches each follows, when its
    #: export records them (:mod:`sealcheck.rundir.states`); None: not recorded
    states: StateRecord | None = None
    #: per record and version, the columns a system's versions do not all write
    #: (``effects-versions.parquet``: ``row, partition, offset, version, to, key, value``); None:
    #: its versions (if any) write rows of one shape
    version_effects: Frame | None = None
    #: the updates of those columns (``export/versioned.parquet``: ``key, value, ts, diff``)
    versioned: Frame | None = None
    #: which of them some row of the export holds (one none holds was never read)
    versioned_held: frozenset[str] = frozenset()

    # derived state, not inputs (``init=False``: a ``dataclasses.replace`` copy starts afresh)
    _memo: dict[str, pl.DataFrame] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    #: a lock per derived frame (or group computed together): checkers run side by side
    #: (``run_checkers``), each frame is computed once, and one checker computing a frame
    #: does not hold up another that needs a different one
    _locks: dict[str, threading.RLock] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    _lock: threading.Lock = field(
        default_factory=threading.Lock, init=False, repr=False, compare=False
    )
    #: records bound at sealed steps (set by :meth:`winners`)
    bound_records: int = field(default=0, init=False, repr=False, compare=False)

    def steps_since(self, name: str) -> int:
        """The ``since`` of a collection in the store's export (before captures filled in
        the steps it merged)."""
        return self.steps.export_sinces.get(name, 0)

    @property
    def states_timed(self) -> bool:
        """Whether a step (or state) has a moment in the run: when the observer first saw its
        collection's upper pass it. True for sealed steps and for states the harness sampled;
        False for states read from the tables' versions at the end (Delta tables alone),
        whose uppers the observer counted in versions, not in states."""
        return self.states is None or self.states.by == SAMPLES

    def context_for_step(self, step: int | None) -> dict[str, Any]:
        """When ``step`` (or state) was first seen sealed, and the last fault, exit and start
        before then (:meth:`sealcheck.rundir.history.History.context_for_step`), for an
        anomaly at it; nothing where it has no moment in the run (:attr:`states_timed`), or
        for no step."""
        if step is None or not self.states_timed:
            return {}
        return self.history.context_for_step(step)

    @property
    def keeps_bindings(self) -> bool:
        """Whether the output keeps ``bindings`` (which offsets each step read). Only an
        export that says so (``"kept": false``: an output observed from outside,
        :mod:`sealcheck.systems.outputs.sql`) keeps none, and the checkers that need them are
        then not applicable; a missing collection is never taken for that."""
        return "bindings" not in self.unkept

    def memoised(self) -> set[str]:
        """The derived frames computed so far (so callers can avoid forcing a parse)."""
        return set(self._memo)

    def _once(
        self, memo: str, compute: Callable[[], pl.DataFrame], group: str | None = None
    ) -> pl.DataFrame:
        """``_memo[memo]``: what ``compute`` returns (it may memoise what it derives beside
        it, under its ``group``'s lock), computed the first time it is asked for, by one
        thread. A computation locks only what it depends on, in that order: no cycle."""
        if memo not in self._memo:
            with self._lock:
                lock = self._locks.setdefault(group or memo, threading.RLock())
            with lock:
                if memo not in self._memo:
                    self._memo[memo] = compute()
        return self._memo[memo]

    def prepare(self) -> None:
        """Read every input now (so that loading and judging can be timed apart)."""
        self.acked()
        self.classified()
        for name in ("data", "errors"):
            self.effects(name)
        for name in ("bindings", "data", "errors"):
            self.change_points(name)

    def change_points(self, name: str) -> pl.DataFrame:
        """:func:`sealcheck.checkers.frames.change_points` of a collection's updates below its
        upper:
        ``kh, vh, ts, diff, mult, row`` (``row`` indexes :attr:`updates`). Computed once."""
        memo = f"cp:{name}"

        def compute() -> pl.DataFrame:
            upper = self.uppers.get(name, 0)
            sealed = (
                self.updates.lazy()
                .with_row_index("row")
                .filter((pl.col("collection") == name) & (pl.col("ts") < upper))
                .select("row", h("key").alias("kh"), h("value").alias("vh"), "ts", "diff")
                .collect(engine="streaming")
            )
            return change_points(sealed, self.sinces.get(name, 0))

        return self._once(memo, compute)

    def change_points_by_key(self, name: str) -> pl.DataFrame:
        """:meth:`change_points` in key order, each key's rows in time order (rows of one key
        and time as they were): what a per-key running sum over time reads (``unique_key``,
        ``prefix``). Sorted once (:func:`sealcheck.checkers.frames.sort_runs`)."""
        return self._once(
            f"cp-by-key:{name}", lambda: sort_runs(self.change_points(name), "kh", "ts")
        )

    def classified(self) -> pl.DataFrame:
        """The records of :func:`sealcheck.checkers.replay.classify` (computed once)."""

        def compute() -> pl.DataFrame:
            records, self._memo["record_errors"] = classify(self.topic)
            return records  # memoised after the errors: "classified" says both are there

        return self._once("classified", compute)

    def record_errors(self) -> pl.DataFrame:
        """The errors of :func:`sealcheck.checkers.replay.classify`: ``row, evh, skh`` (computed
        once)."""
        self.classified()
        return self._memo["record_errors"]

    def acked(self) -> pl.DataFrame:
        """The acknowledged writes in history order: ``pos``, ``kh``, ``vh``
        (:func:`sealcheck.checkers.kafka_lost.hashed`). Computed once."""
        return self._once("acked", lambda: kafka_lost.hashed(self.history))

    def kafka_lost(self) -> pl.DataFrame:
        """Acknowledged writes the topic does not hold as written — a Kafka anomaly, never the
        pipeline's: ``ack``, ``pos``, ``kh``, ``vh``, ``present``
        (:func:`sealcheck.checkers.kafka_lost.lost`). Computed once."""
        return self._once("kafka_lost", lambda: kafka_lost.lost(self.classified(), self.acked()))

    def kafka_explains(self, name: str) -> pl.Expr:
        """True on the rows (column ``kh``: a key hash of ``data`` or ``errors``) whose
        differences Kafka's lost writes may explain: they are not blamed on the system. By the
        built-in encoding these are the keys of the lost writes; by a system's own mapping,
        whose effects of a write the topic lost are unknown, every key once Kafka lost any."""
        lost = self.kafka_lost()
        if lost.height == 0:
            return pl.lit(False)
        if self.stated is not None:
            return pl.lit(True)
        if name == "data":
            return pl.col("kh").is_in(lost["kh"].drop_nulls().implode())
        rows = self.ack_rows(lost["ack"].to_list()).values()
        frame = pl.DataFrame(
            [(r["partition"], r["key"]) for r in rows],
            schema={"partition": pl.Int64, "key": pl.Binary},
            orient="row",
        )
        return pl.col("kh").is_in(frame.select(h(slot_bytes()).alias("skh"))["skh"].implode())

    def effects(self, name: str) -> pl.DataFrame:
        """What the records do to collection ``name`` (``data`` or ``errors``): ``row,
        partition, offset, kh, vh`` (``vh`` null: a delete), from the system's own mapping
        (:attr:`stated`) or the built-in encoding
        (:func:`sealcheck.checkers.replay.builtin_effects`). Computed once."""
        memo = f"effects:{name}"

        def compute() -> pl.DataFrame:
            if self.stated is None:
                both = builtin_effects(self.classified(), self.record_errors())
                self._memo.update((f"effects:{t}", f) for t, f in both.items() if t != name)
                return both[name]
            return (
                self.stated.lazy()
                .filter(pl.col("table") == name)
                .select("row", "partition", "offset", h("key").alias("kh"), h("value").alias("vh"))
                .collect(engine="streaming")
            )

        return self._once(memo, compute, "effects")

    def effect_value(self, name: str, row: int) -> bytes | None:
        """The value input record ``row`` puts into collection ``name`` (None: it deletes, or
        does nothing there), with its bytes, for people."""
        if self.stated is None:
            rec = self.topic_row(row)
            if name == "data":
                return rec["value"] if rec["value"] is not None else None
            err = self.record_errors().filter(pl.col("row") == row)
            if err.height == 0:
                return None
            reason = self.classified().slice(row, 1).with_columns(reason_text().alias("text"))
            one = pl.DataFrame([rec]).select(error_bytes(pl.lit(reason["text"][0])).alias("e"))
            return bytes(one["e"][0])
        found = (
            self.stated.lazy()
            .filter((pl.col("row") == row) & (pl.col("table") == name))
            .select("value")
            .collect()
        )
        return found["value"][0] if found.height else None

    def effect_key(self, name: str, row: int) -> bytes | None:
        """The key input record ``row`` acts on in collection ``name`` (None: none), with its
        bytes, for people: by the built-in encoding the raw key in ``data`` and its slot
        (``key:<hex>``, ``null:<partition>``) in ``errors``."""
        if self.stated is None:
            rec = self.topic_row(row)
            if name == "data":
                return rec["key"]  # type: ignore[no-any-return]
            one = pl.DataFrame([rec], schema=TOPIC_SCHEMA).select(slot_bytes().alias("s"))
            return bytes(one["s"][0])
        found = (
            self.stated.lazy()
            .filter((pl.col("row") == row) & (pl.col("table") == name))
            .select("key")
            .collect()
        )
        return found["key"][0] if found.height else None

    def record_keys(self, raw: bytes) -> pl.DataFrame:
        """The input records whose key (in any collection, by the system's mapping; the raw
        key by the built-in encoding) is ``raw``, with their bytes, in offset order."""
        if self.stated is None:
            found = self.topic.lazy().filter(pl.col("key") == raw)
            return found.sort("offset", "partition").collect()
        rows = (
            self.stated.lazy().filter(pl.col("key") == raw).select("row").unique().collect()["row"]
        )
        topic = self.topic.lazy().with_row_index("row").with_columns(pl.col("row").cast(pl.Int64))
        return (
            topic.filter(pl.col("row").is_in(rows.implode()))
            .drop("row")
            .sort("offset", "partition")
            .collect()
        )

    def winners(self, name: str = "data") -> pl.DataFrame:
        """:func:`sealcheck.checkers.replay.step_winners` of collection ``name``'s effects of
        the records bound at sealed steps (computed once). ``bound_records`` counts those
        records."""
        memo = f"winners:{name}"

        def compute() -> pl.DataFrame:
            if "step" not in self._memo:
                sealed = min(self.uppers.get("data", 0), self.uppers.get("bindings", 0))
                ranges = binding_ranges(self.collection("bindings"), sealed)
                self._memo["step"] = assign_steps(self.classified(), ranges).to_frame()
            step = self._memo["step"]["step"]
            self.bound_records = step.len() - step.null_count()
            since = max(self.sinces.values(), default=0)
            return step_winners(self.effects(name), step, since)

        return self._once(memo, compute, "winners")

    def model_changes(self, name: str) -> pl.DataFrame:
        """The winners as changes of ``data`` or ``errors``
        (:func:`sealcheck.checkers.replay.changes`)."""
        return changes(self.winners(name))

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

    def live_values(self, name: str, kh: int, ts: int | None = None) -> list[dict[str, Any]]:
        """What the store holds for a key after step ``ts`` (the end when None): each value
        with a non-zero multiplicity, as ``{"value": text, "multiplicity": m}`` (for people)."""
        cp = self.change_points(name).filter(pl.col("kh") == kh)
        if ts is not None:
            cp = cp.filter(pl.col("ts") <= ts)
        last = cp.sort("ts").unique(subset=["vh"], keep="last").filter(pl.col("mult") != 0)
        held = [
            {"value": show(self.update_row(int(r["row"]))["value"]), "multiplicity": r["mult"]}
            for r in last.iter_rows(named=True)
        ]
        return sorted(held, key=lambda v: (str(v["value"]), v["multiplicity"]))

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
        rows = self.history.collect(
            self.history.acked.lazy().with_row_index("i").filter(pl.col("i").is_in(wanted))
        )
        return {int(r["i"]): r for r in rows.iter_rows(named=True)}

    def collection(self, name: str) -> pl.DataFrame:
        """The updates of one collection with their bytes (``key, value, ts, diff``): for the
        small ones (``bindings``, ``errors``). Read once: several checkers need them."""
        return self._once(
            f"collection:{name}",
            lambda: (
                self.updates.lazy()
                .filter(pl.col("collection") == name)
                .drop("collection")
                .collect(engine="streaming")
            ),
        )

    def input_problems(self) -> list[str]:
        """Why the verdict cannot be valid whatever the checkers find: files that are not the
        run's (:attr:`refusals`), a history that is missing or does not reach its final op,
        or that holds fewer acknowledged writes than the harness counted."""
        problems = [*self.refusals, *self.history.problems()]
        written = self.history.written_acks()
        if written is not None and not problems:
            read = self.acked().height
            if read != written:
                problems.append(
                    f"the history holds {read:,} acknowledged writes but the harness counted "
                    f"{written:,}: lines are missing or were added"
                )
        return problems

    def log_end(self) -> dict[int, int]:
        """Per partition, one past the last offset in the dumped topic."""
        ends = self.classified().group_by("partition").agg(pl.col("offset").max() + 1)
        return {int(p): int(o) for p, o in ends.iter_rows()}
