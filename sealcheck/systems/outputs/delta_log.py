"""Reading a Structured Streaming query's checkpoint and its Delta tables' transaction logs
straight from their files, never through Spark (the engine under test).

Formats relied on (Spark 4.0 / Delta 4.0; ``docs/systems.md``, "Delta outputs"):

* ``<checkpoint>/offsets/<N>`` (written before batch N runs): line 1 ``v1``, line 2 the
  batch's metadata JSON (``batchTimestampMs``: when the batch was planned, by the driver's
  clock), then one JSON line per source — for a Kafka source ``{"<topic>": {"<partition>":
  <next offset>, ...}}``: the end of batch N's range.
* ``<checkpoint>/commits/<N>`` (written after ``foreachBatch`` returned): batch N is done.
* ``<table>/_delta_log/<version, 20 digits>.json``: one JSON action per line; ``commitInfo``
  holds the commit's ``timestamp`` (the driver's clock; ``inCommitTimestamp`` where the table
  keeps one) and ``userMetadata``; a commit that used Delta's idempotent writes holds ``txn``
  (``appId``, ``version`` = the batch id).

**Which batch wrote a version.** The transaction identifier's version when Delta recorded
one, else a ``batch=<id>`` tag in ``userMetadata``, else the driver's clock (:class:`Clock`):
batch N+1 is planned only after batch N's ``foreachBatch`` returned, so a version belongs to
the last batch planned strictly before it was committed — also when a crash makes Spark run
batch N again, which keeps N's planned time. A job needs none of the three written for
Sealcheck: a ``foreachBatch`` that merges into Delta is judged as it is.
"""

from __future__ import annotations

import bisect
import json
import re
from dataclasses import dataclass
from pathlib import Path

_VERSION = re.compile(r"^(\d{20})\.json$")
_BATCH_TAG = re.compile(r"^batch=(\d+)$")


class LayoutError(ValueError):
    """A file of the checkpoint or of a table's log is not in the format this reader relies
    on."""


def checkpoint_batches(checkpoint: Path, kind: str = "offsets") -> list[int]:
    """The batch ids with a ``<checkpoint>/<kind>/<N>`` file, ascending."""
    try:
        names = [p.name for p in (checkpoint / kind).iterdir()]
    except FileNotFoundError:
        return []
    return sorted(int(n) for n in names if n.isdigit())


def _offsets_lines(checkpoint: Path, batch: int) -> list[str]:
    path = checkpoint / "offsets" / str(batch)
    lines = path.read_text().splitlines()
    if len(lines) < 3 or lines[0] != "v1":
        raise LayoutError(f"{path}: expected 'v1', metadata and a source line; got {lines[:3]}")
    return lines


def offsets(checkpoint: Path, batch: int, topic: str | None = None) -> dict[int, int]:
    """The end offsets (partition -> next offset) of ``batch`` from ``offsets/<batch>``: of
    ``topic``, or of the one topic the query reads when None."""
    lines = _offsets_lines(checkpoint, batch)
    source = json.loads(lines[2])
    name = (
        topic
        if topic is not None
        else next(iter(source), None)
        if isinstance(source, dict)
        else None
    )
    if not isinstance(source, dict) or name not in source or (topic is None and len(source) != 1):
        path = checkpoint / "offsets" / str(batch)
        raise LayoutError(f"{path}: expected the offsets of topic {name!r}, got {lines[2][:200]}")
    return {int(p): int(o) for p, o in source[name].items()}


def planned_at(checkpoint: Path, batch: int) -> int:
    """When ``batch`` was planned (``batchTimestampMs`` of ``offsets/<batch>``, ms)."""
    meta = json.loads(_offsets_lines(checkpoint, batch)[1])
    if not isinstance(meta, dict) or not isinstance(meta.get("batchTimestampMs"), int):
        raise LayoutError(f"{checkpoint / 'offsets' / str(batch)}: no batchTimestampMs in {meta}")
    return int(meta["batchTimestampMs"])


class Clock:
    """The batches of one query by the time they were planned: which batch a commit made at
    some time belongs to (the last one planned strictly before it)."""

    def __init__(self, checkpoint: Path) -> None:
        self.checkpoint = checkpoint
        self._batches: list[int] = []
        self._times: list[int] = []

    def batch_at(self, ms: int) -> int | None:
        """The batch running at ``ms`` (None: before the first one was planned)."""
        found = checkpoint_batches(self.checkpoint)
        for b in found[len(self._batches) :]:  # offsets files are written once, in order
            self._batches.append(b)
            self._times.append(planned_at(self.checkpoint, b))
        at = bisect.bisect_left(self._times, ms) - 1
        return self._batches[at] if at >= 0 else None


@dataclass(frozen=True)
class Commit:
    """One Delta commit of a table, as its log records it."""

    version: int
    operation: str | None
    txn_app: str | None
    txn_version: int | None
    user_metadata: str | None
    #: when it was committed (ms, the driver's clock; None: the log does not say)
    timestamp: int | None = None

    @property
    def tagged_batch(self) -> int | None:
        """The micro-batch the commit names itself: the transaction identifier's version when
        Delta recorded one, else the ``batch=<id>`` tag (None: neither)."""
        if self.txn_version is not None:
            return self.txn_version
        match = _BATCH_TAG.match(self.user_metadata or "")
        return int(match[1]) if match else None

    def batch(self, clock: Clock | None = None) -> int | None:
        """The micro-batch this commit belongs to: :attr:`tagged_batch`, else by ``clock``
        (None: none)."""
        tagged = self.tagged_batch
        if tagged is not None or clock is None or self.timestamp is None:
            return tagged
        return clock.batch_at(self.timestamp)


def versions(table: Path) -> list[int]:
    """The versions with a JSON commit file, ascending."""
    try:
        names = [p.name for p in (table / "_delta_log").iterdir()]
    except FileNotFoundError:
        return []
    return sorted(int(m[1]) for n in names if (m := _VERSION.match(n)))


def commit(table: Path, version: int) -> Commit:
    """Version ``version`` of ``table`` from its JSON commit file."""
    path = table / "_delta_log" / f"{version:020d}.json"
    op = app = meta = None
    txn: int | None = None
    when: int | None = None
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        action = json.loads(line)
        if "txn" in action:
            app, txn = action["txn"].get("appId"), int(action["txn"]["version"])
        elif "commitInfo" in action:
            info = action["commitInfo"]
            op, meta = info.get("operation"), info.get("userMetadata")
            stamp = info.get("inCommitTimestamp", info.get("timestamp"))
            when = int(stamp) if isinstance(stamp, int) else None
    return Commit(version, op, app, txn, meta, when)


def table_upper(table: Path, clock: Clock | None = None) -> int:
    """One past the batch of the table's newest commit (0: no batch committed yet)."""
    for version in reversed(versions(table)):
        batch = commit(table, version).batch(clock)
        if batch is not None:
            return batch + 1
    return 0


def upper(table: Path, checkpoint: Path) -> int:
    """A table's upper: one past the newer of the batch of its newest commit and the newest
    batch its query committed (``commits/N``: the batch's ``foreachBatch`` returned, so each
    of its writes is done — a MERGE that changes nothing may leave no Delta commit)."""
    done = checkpoint_batches(checkpoint, "commits")
    return max(table_upper(table, Clock(checkpoint)), done[-1] + 1 if done else 0)
