"""Which batches each state of an output without bindings follows: the per-state record an
export keeps in ``export/versions.json`` under ``"states"``, so that an anomaly at a state names
the job's batch (``"state 8 (batch 12 committed; batches 11-12 since the state before)"``)
rather than an index only.

Two kinds of states, two ways to know their batches:

* **samples** (SQL tables, Kafka topics): the harness took each state while the run went on.
  When the job's descriptor declares windows told by its checkpoint
  (``streaming_windows("checkpoint")``), the harness read the checkpoint at each state: the
  newest ``commits/N`` *before* it read the output (every batch up to it is in the state: a
  Structured Streaming query writes ``commits/N`` only after its sink committed batch N) and
  the newest ``offsets/N`` *after* (no later batch can be in it: a batch is planned before its
  sink writes). A later look that finds the output unchanged confirms the state as of the
  batches committed by then (:func:`confirm`): a state read while its batch was in flight is
  named by that batch once its ``commits/N`` is seen. Without such windows nothing is read
  (``"checkpoint": false``) and a state is known by its index only.
* **batches** / **commits** (Delta tables judged alone): the states are the tables' versions,
  read at the end — per batch their commits name (``batch`` = the state) or per commit in
  commit order; each names its table versions, and its batch when its commit names one.

The shape (:meth:`StateRecord.to_dict`)::

    "states": {"by": "samples" | "batches" | "commits",
               "checkpoint": true | false,       # samples: whether the checkpoint was read
               "list": [{"state": 0, "committed": 3 | null, "planned": 4 | null,
                         "versions": ["data v5", "errors v4"]}, ...]}

Imports nothing else of Sealcheck.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from sealcheck.rundir.regular import read_text
from sealcheck.rundir.runid import stamp_json

#: the key of ``versions.json`` that holds the record
STATES = "states"
#: the states are the harness's samples, taken while the run went on
SAMPLES = "samples"
#: the states are the batches the tables' commits name (Delta tables alone)
BATCHES = "batches"
#: the states are the tables' commits in commit order (Delta tables alone)
COMMITS = "commits"


@dataclass(frozen=True)
class StateBatches:
    """One state and the batches it follows: the newest batch committed (``commits/N``) before
    the harness read it, and the newest planned (``offsets/N``) after — a state of the tables
    alone has the batch its commits name as both —, and the table versions it is made of
    (Delta tables alone). None: not known."""

    state: int
    committed: int | None = None
    planned: int | None = None
    versions: tuple[str, ...] = ()

    @property
    def in_flight(self) -> bool:
        """Whether a batch was planned past the newest committed one while the state was read
        (part of it may be in the state)."""
        return self.planned is not None and (
            self.committed is None or self.planned > self.committed
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {
            "state": self.state,
            "committed": self.committed,
            "planned": self.planned,
            "versions": list(self.versions),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> StateBatches:
        """Read the JSON form (``TypeError`` / ``ValueError`` / ``KeyError`` when malformed)."""
        committed, planned = d.get("committed"), d.get("planned")
        return cls(
            int(d["state"]),
            None if committed is None else int(committed),
            None if planned is None else int(planned),
            tuple(str(v) for v in d.get("versions") or ()),
        )


@dataclass(frozen=True)
class StateRecord:
    """Every state an export holds, in order, with the batches each follows."""

    #: :data:`SAMPLES`, :data:`BATCHES` or :data:`COMMITS`
    by: str
    #: samples: whether the job's checkpoint was read at each state (its batches are known)
    checkpoint: bool
    states: tuple[StateBatches, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (``versions.json``'s ``"states"``)."""
        return {
            "by": self.by,
            "checkpoint": self.checkpoint,
            "list": [s.to_dict() for s in self.states],
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> StateRecord:
        """Read the JSON form (``TypeError`` / ``ValueError`` / ``KeyError`` when malformed)."""
        by = str(d["by"])
        if by not in (SAMPLES, BATCHES, COMMITS):
            raise ValueError(f"states by {by!r}, not {SAMPLES}, {BATCHES} or {COMMITS}")
        return cls(by, bool(d.get("checkpoint")), tuple(map(StateBatches.from_dict, d["list"])))

    @property
    def named(self) -> list[StateBatches]:
        """The states that follow a known committed batch (a state read while the first batch
        was still in flight follows none)."""
        return [s for s in self.states if s.committed is not None]

    def labels(self) -> dict[int, str]:
        """State -> what the job calls it, for naming it beside an anomaly's state: the batches
        it follows (samples of a job whose checkpoint was read), its batch and versions (Delta
        tables alone); none for a state of which nothing is known."""
        out: dict[int, str] = {}
        before: int | None = None  # the newest batch committed at the state before
        for s in self.states:
            if self.by == SAMPLES:
                if self.checkpoint:
                    out[s.state] = _sampled(s, before, first=not out)
                    before = s.committed if s.committed is not None else before
                continue
            batch = s.committed
            what = ", ".join(s.versions)
            if self.by == BATCHES and batch is not None:
                out[s.state] = f"batch {batch}" + (f": {what}" if what else "")
            elif what or batch is not None:
                tag = f"batch {batch}" if batch is not None else ""
                out[s.state] = f"{what} ({tag})" if what and tag else what or tag
        return out


def _sampled(s: StateBatches, before: int | None, first: bool) -> str:
    """A sampled state's batches in words: the newest committed before it was read, any in
    flight while it was, and those committed since the state before."""
    now = "no batch committed yet" if s.committed is None else f"batch {s.committed} committed"
    if s.in_flight:
        assert s.planned is not None  # in flight: planned past the newest committed
        low = 0 if s.committed is None else s.committed + 1
        flight = f"batch {low}" if low == s.planned else f"batches {low}-{s.planned}"
        now += f", {flight} in flight"
    if s.committed is None:
        return now
    low = 0 if before is None else before + 1
    if low > s.committed:
        since = "none committed since the state before"
    else:
        span = f"batch {low}" if low == s.committed else f"batches {low}-{s.committed}"
        since = f"{span} since the start" if first else f"{span} since the state before"
    return f"{now}; {since}"


def read_states(path: Path, run_dir: Path) -> StateRecord | None:
    """The record in a ``versions.json`` of ``run_dir`` (None: no such file, not a regular
    file of the run directory, no record in it, or not of this shape — labels only, so none is
    fine)."""
    try:
        doc = json.loads(read_text(path, run_dir))
        raw = doc.get(STATES) if isinstance(doc, dict) else None
        return None if raw is None else StateRecord.from_dict(raw)
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None


def write_states(path: Path, record: StateRecord, run_dir: Path) -> None:
    """Write ``record`` as ``path`` (the ``versions.json`` of an export of states, which holds
    nothing else), stamped with the run's id (:mod:`sealcheck.rundir.runid`)."""
    doc = stamp_json({STATES: record.to_dict()}, run_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1, sort_keys=True))


def confirm(at_states: list[tuple[int | None, int | None]], committed: int | None) -> None:
    """Raise the last sampled state's newest committed batch to ``committed`` (read from the
    checkpoint *before* the harness found the output unchanged since that state): every batch
    up to it was committed to the sink before then, so each is in the state — a state read
    while its batch was in flight is that batch's once its ``commits/N`` is seen with the
    output unchanged."""
    if at_states and committed is not None:
        before, planned = at_states[-1]
        if before is None or committed > before:
            at_states[-1] = (committed, planned)


class Checkpoint(Protocol):
    """A job's checkpoint as a state-taking output reads it (:class:`sealcheck.systems.job.
    JobCheckpoint`): its newest batch committed, and its newest planned."""

    def committed(self) -> int | None:
        """The newest batch committed (``commits/N``; None: none yet)."""

    def planned(self) -> int | None:
        """The newest batch planned (``offsets/N``; None: none yet)."""


class StateBatchRecorder:
    """What an output that takes states (SQL tables, Kafka topics) records of the job's
    batches at each: the newest committed before it reads (every batch up to it is in the
    state), the newest planned after (no later one is). Without a :attr:`checkpoint` its
    states name no batch."""

    def __init__(self) -> None:
        #: the job's checkpoint, when the descriptor's windows tell one (set once, by the
        #: deployment)
        self.checkpoint: Checkpoint | None = None
        self._at_states: list[tuple[int | None, int | None]] = []

    def committed(self) -> int | None:
        """Before a read: the newest batch committed (None without a checkpoint)."""
        return self.checkpoint.committed() if self.checkpoint is not None else None

    def planned(self) -> int | None:
        """After a read: the newest batch planned (None without a checkpoint)."""
        return self.checkpoint.planned() if self.checkpoint is not None else None

    def taken(self, committed: int | None, planned: int | None) -> None:
        """A new state was taken, between ``committed`` (read before it) and ``planned``."""
        self._at_states.append((committed, planned))

    def unchanged(self, committed: int | None) -> None:
        """A look found the output as it was at the last state, with ``committed`` the newest
        batch committed before the look (:func:`confirm`)."""
        confirm(self._at_states, committed)

    def record(self) -> StateRecord:
        """Every state taken so far (:func:`sampled`)."""
        return sampled(self._at_states, checkpoint=self.checkpoint is not None)


def sampled(at_states: Iterable[tuple[int | None, int | None]], checkpoint: bool) -> StateRecord:
    """The record of states the harness sampled: ``at_states[i]`` is state ``i``'s newest
    committed batch (before its read) and newest planned (after it)."""
    states = tuple(StateBatches(i, c, p) for i, (c, p) in enumerate(at_states))
    return StateRecord(SAMPLES, checkpoint, states)
