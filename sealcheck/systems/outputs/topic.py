"""A job's output in Kafka topics of upserts (a compacted output topic, and one of dead
letters), judged from their prefixes: a record's key is the row's key, its value the row (a
JSON object's fields as columns, or with ``value`` its text as it is), a tombstone deletes the
key (``docs/systems.md``, "Outputs without bindings (Kafka topics)"). Keys, values and
JSON that are not UTF-8 are read as text with U+FFFD replacement, as tables are
(:func:`sealcheck.systems.outputs.rows.text`).

A job states where its topics are and nothing else::

    TopicOutput(run.bootstrap, "accounts-out", errors="dead-letters-out", exclude=("at",))

* **States are prefixes taken between batches.** A sink that writes a batch's records one by
  one (Spark's Kafka sink, at least once) leaves prefixes inside a batch that no input prefix
  explains, so the harness takes the topics' log ends as a state only while the job is between
  batches — its declared crash windows (``streaming_windows("checkpoint")``) showing no batch in
  flight before and after the look, none planned meanwhile
  (:func:`sealcheck.systems.job_checkpoint.batch_boundary`). The topics are read once, at the
  export, and each state is the upsert of every record below its log ends.
* **No bindings**: as for SQL tables (:mod:`sealcheck.systems.outputs.sql`), each state records
  the job's batches (``versions.json``: :mod:`sealcheck.rundir.states`), ``prefix`` judges
  every state, the harness calls the job caught up once the topics and its directory have
  settled, and a final look with a batch in flight fails the export (UNKNOWN).
* **Compaction.** The export reads the topics as they are at the end of the run: a record the
  log cleaner removed below a state's log end is missing from that state. Kafka never compacts
  a partition's active segment (``segment.ms``, 7 days by default), so a test run's prefixes
  are whole; a topic whose segments roll within the run may show states no prefix explains.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaException

from sealcheck.core.effects import EffectError, encode_key
from sealcheck.infra.topic import dump_topic, log_end
from sealcheck.rundir.files import VERSIONS, TopicRecord, write_export
from sealcheck.rundir.states import Checkpoint, StateBatchRecorder, write_states
from sealcheck.systems.api import Progress
from sealcheck.systems.outputs.base import Output
from sealcheck.systems.outputs.rows import Encoder, RowShape, text
from sealcheck.systems.outputs.sql import COLLECTIONS, OutputError

Ends = dict[str, dict[int, int]]


class _Marks:
    """The log ends taken as states so far (shared by the observer's thread and the export)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.ends: list[Ends] = []
        self.changed_at = 0.0
        self.boundary: Callable[[], str | None] | None = None
        #: the job's batches at each state taken (:mod:`sealcheck.rundir.states`)
        self.batches = StateBatchRecorder()


@dataclass(frozen=True)
class TopicOutput(Output):
    """Where a job writes upserts into Kafka: its output topic and its dead-letter topic."""

    #: the brokers (the run's: ``JobRun.bootstrap``)
    bootstrap: str
    #: the topic of upserts (a key per row, a tombstone for a delete)
    data: str
    #: the dead-letter topic, if the job has one (None: ``errors`` stays empty)
    errors: str | None = None
    #: the column name a record's key takes (the row's key)
    key: str = "key"
    #: the column a record's value takes as it is (None: a JSON object, its fields as columns)
    value: str | None = None
    #: columns of run metadata, never compared (a batch id, a load time)
    exclude: tuple[str, ...] = ()
    #: how long the topics must stay unchanged, with the job running, for the harness to call
    #: the job caught up (:meth:`sealcheck.systems.api.Progress.settled`)
    settle_s: float = 30.0
    #: take states only between batches (always, for a sink that writes a batch record by
    #: record: the job's declared windows tell when a batch is in flight)
    between_batches: bool = True
    _marks: _Marks = field(default_factory=_Marks, init=False, repr=False, compare=False)

    def topics(self) -> dict[str, str]:
        """Each collection's topic."""
        return {"data": self.data, **({"errors": self.errors} if self.errors else {})}

    def watch_batches(self, boundary: Callable[[], str | None]) -> None:
        """Take states only between batches, as ``boundary`` tells."""
        self._marks.boundary = boundary

    def watch_checkpoint(self, checkpoint: Checkpoint) -> None:
        """Record at each state the job's batches, as its ``checkpoint`` tells (newest
        committed before the look, newest planned after)."""
        self._marks.batches.checkpoint = checkpoint

    def _ends(self) -> Ends | None:
        """Each topic's log ends; None while a topic has no partitions yet (not created) or
        the broker cannot be reached (the next look tries again)."""
        try:
            ends = {c: log_end(self.bootstrap, t, timeout_s=2.0) for c, t in self.topics().items()}
        except (KafkaException, KeyError, OSError):
            return None
        return ends if all(ends.values()) else None

    def observe(self, strict: bool = False) -> int | None:
        """Take the topics' log ends as the next state when they moved and the job is between
        batches; the number of states (None before the topics exist). With ``strict`` (the
        export) a batch in flight or unreadable topics are an :class:`OutputError`."""
        m = self._marks
        with m.lock:
            gate = m.boundary if self.between_batches else None
            between = gate() if gate is not None else ""
            if between is None:
                if strict:
                    raise OutputError(f"{self.where()}: a batch was in flight at the end")
                return len(m.ends) or None
            committed = m.batches.committed()
            ends = self._ends()
            planned = m.batches.planned()
            if ends is None or (gate is not None and gate() != between):
                if strict:
                    raise OutputError(f"{self.where()}: the topics cannot be read at the end")
                return len(m.ends) or None
            if not m.ends or ends != m.ends[-1]:
                m.ends.append(ends)
                m.batches.taken(committed, planned)
                m.changed_at = time.monotonic()
            else:  # nothing written since the last state
                m.batches.unchanged(committed)
            return len(m.ends)

    def where(self) -> str:
        """The topics, for people."""
        return f"topics {', '.join(self.topics().values())} at {self.bootstrap}"

    def uppers(self) -> dict[str, int] | None:
        """``data`` and ``errors``: the states taken (a look first); None before the topics
        exist."""
        n = self.observe()
        return None if n is None else dict.fromkeys(COLLECTIONS, n)

    def progress(self) -> Progress | None:
        """The uppers, no bound offsets, and when the topics last moved (:attr:`settle_s`)."""
        ups = self.uppers()
        if ups is None:
            return None
        return Progress(ups, {}, settle_s=self.settle_s, changed_at=self._marks.changed_at)

    def export(self, run_dir: Path) -> None:
        """Every state as updates of ``data`` and ``errors``, after one last look that must
        succeed; ``bindings`` not kept (``"kept": false``)."""
        self.observe(strict=True)
        with self._marks.lock:
            marks = list(self._marks.ends)
            record = self._marks.batches.record()
        encode = RowShape(self.key, None, self.value, tuple(self.exclude)).encoder("data")
        rows: list[tuple[Any, ...]] = []
        for name, topic in self.topics().items():
            records = dump_topic(self.bootstrap, topic)
            rows += states(name, records, [m[name] for m in marks], lambda r: self._row(r, encode))
        frontiers: dict[str, dict[str, Any]] = {
            c: {"upper": len(marks), "since": 0} for c in COLLECTIONS
        }
        frontiers["bindings"] = {"upper": 0, "since": 0, "kept": False}
        write_export(run_dir, frontiers, [rows] if rows else [])
        write_states(run_dir / VERSIONS, record, run_dir)

    def _row(self, record: TopicRecord, encode: Encoder) -> tuple[bytes, bytes | None]:
        """A record's ``(key, value)`` as the checkers compare them (value None: a
        tombstone)."""
        where = f"{self.where()}: the record at partition {record.partition} offset {record.offset}"
        if record.key is None:  # read at the export only: the states keep advancing, no wait
            raise OutputError(
                f"{where} has no key: a record without a key cannot be judged (every record of "
                "an upsert topic needs one). If the job should not write records without a key, "
                "that is a bug in the job; otherwise make the job and effect() send such records "
                "to the dead-letter topic (DeadLetter) or SKIP them"
            )
        key = text(record.key)
        if record.value is None:
            return encode_key(key), None
        try:
            if self.value is not None:
                return encode({self.key: key, self.value: text(record.value)})
            doc = json.loads(text(record.value))
            if not isinstance(doc, dict):
                raise ValueError("not a JSON object")
            return encode({**doc, self.key: key})
        except (ValueError, EffectError) as exc:
            raise OutputError(
                f"{where} cannot be compared ({exc}): give value=<column> to compare values as "
                "they are"
            ) from None


def states(
    name: str,
    records: list[TopicRecord],
    marks: list[dict[int, int]],
    row: Callable[[TopicRecord], tuple[bytes, bytes | None]],
) -> list[tuple[Any, ...]]:
    """The updates of the states ``marks`` (log ends per partition) of one topic: state ``i``
    is the upsert of every record below ``marks[i]`` — per partition and key, its last
    record's row, none after a tombstone — as ``(name, key, value, ts = i, diff)``."""
    held: dict[tuple[int, bytes], bytes] = {}  # (partition, key) -> value
    by_partition: dict[int, list[TopicRecord]] = {}
    for r in sorted(records, key=lambda r: (r.partition, r.offset)):
        by_partition.setdefault(r.partition, []).append(r)
    pos = dict.fromkeys(by_partition, 0)  # the next record to apply, per partition
    out: list[tuple[Any, ...]] = []
    for i, ends in enumerate(marks):
        changed: dict[tuple[int, bytes], bytes | None] = {}
        for p, end in ends.items():
            part = by_partition.get(p, [])
            while pos.get(p, 0) < len(part) and part[pos[p]].offset < end:
                key, value = row(part[pos[p]])
                changed[p, key] = value
                pos[p] += 1
        for (p, key), value in changed.items():
            old = held.get((p, key))
            if old == value:
                continue
            if old is not None:
                out.append((name, key, old, i, -1))
            if value is not None:
                out.append((name, key, value, i, 1))
                held[p, key] = value
            else:
                held.pop((p, key), None)
    return out
