"""Reading the delta-streaming job's directory straight from its files, never through Spark
(the engine under test): the query's checkpoint and the Delta tables' transaction logs.

Formats relied on (Spark 4.0 / Delta 4.0; ``docs/architecture.md``, "The delta-streaming job"):

* ``checkpoint/offsets/<N>`` (written before batch N runs): line 1 ``v1``, line 2 the batch's
  metadata JSON, then one JSON line per source — for a Kafka source
  ``{"<topic>": {"<partition>": <next offset>, ...}}``: the end of batch N's range.
* ``checkpoint/commits/<N>`` (written after ``foreachBatch`` returned): batch N is done.
* ``<table>/_delta_log/<version, 20 digits>.json``: one JSON action per line; a commit of the
  job holds ``txn`` (``appId``, ``version`` = the batch id) when it used Delta's idempotent
  writes, and ``commitInfo.userMetadata = "batch=<id>"`` always.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

TABLES = ("data", "errors")
_VERSION = re.compile(r"^(\d{20})\.json$")
_BATCH_TAG = re.compile(r"^batch=(\d+)$")


class LayoutError(ValueError):
    """A file of the job's directory is not in the format this reader relies on."""


def checkpoint_batches(
    root: Path, kind: str = "offsets", checkpoint: str = "checkpoint"
) -> list[int]:
    """The batch ids with a ``<checkpoint>/<kind>/<N>`` file, ascending."""
    folder = root / checkpoint / kind
    try:
        names = [p.name for p in folder.iterdir()]
    except FileNotFoundError:
        return []
    return sorted(int(n) for n in names if n.isdigit())


def offsets(root: Path, batch: int, topic: str | None = None) -> dict[int, int]:
    """The end offsets (partition -> next offset) of ``batch`` from ``offsets/<batch>``."""
    path = root / "checkpoint" / "offsets" / str(batch)
    lines = path.read_text().splitlines()
    if len(lines) < 3 or lines[0] != "v1":
        raise LayoutError(f"{path}: expected 'v1', metadata and a source line; got {lines[:3]}")
    source = json.loads(lines[2])
    name = (
        topic
        if topic is not None
        else next(iter(source), None)
        if isinstance(source, dict)
        else None
    )
    if not isinstance(source, dict) or name not in source or (topic is None and len(source) != 1):
        raise LayoutError(f"{path}: expected the offsets of topic {name!r}, got {lines[2][:200]}")
    return {int(p): int(o) for p, o in source[name].items()}


@dataclass(frozen=True)
class Commit:
    """One Delta commit of a table, as its log records it."""

    version: int
    operation: str | None
    txn_app: str | None
    txn_version: int | None
    user_metadata: str | None

    @property
    def batch(self) -> int | None:
        """The micro-batch this commit belongs to: the transaction identifier's version when
        Delta recorded one, else the ``batch=<id>`` tag (None: neither)."""
        if self.txn_version is not None:
            return self.txn_version
        match = _BATCH_TAG.match(self.user_metadata or "")
        return int(match[1]) if match else None


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
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        action = json.loads(line)
        if "txn" in action:
            app, txn = action["txn"].get("appId"), int(action["txn"]["version"])
        elif "commitInfo" in action:
            op = action["commitInfo"].get("operation")
            meta = action["commitInfo"].get("userMetadata")
    return Commit(version, op, app, txn, meta)


def table_upper(table: Path) -> int:
    """One past the batch of the table's newest commit (0: no batch committed yet)."""
    found = versions(table)
    for version in reversed(found):
        batch = commit(table, version).batch
        if batch is not None:
            return batch + 1
    return 0


def writer_checkpoint(root: Path, table: str) -> str:
    """The checkpoint of the query that writes ``table``: ``checkpoint``, or the dead-letter
    query's own ``checkpoint-errors`` where a job runs one."""
    own = f"checkpoint-{table}"
    return own if (root / own).exists() else "checkpoint"


def uppers(root: Path) -> dict[str, int] | None:
    """The three collections' uppers (None: the job has written nothing yet).

    ``bindings``: one past the newest ``offsets/N``. A table: one past the newer of the batch
    of its newest commit and the newest batch its query committed (``commits/N``: the batch's
    ``foreachBatch`` returned, so each of its MERGEs is done — a MERGE that changes nothing
    and records no transaction identifier leaves no Delta commit)."""
    if not (root / "checkpoint").exists() and not (root / "data").exists():
        return None
    planned = checkpoint_batches(root)
    out = {"bindings": planned[-1] + 1 if planned else 0}
    for name in TABLES:
        done = checkpoint_batches(root, "commits", writer_checkpoint(root, name))
        out[name] = max(table_upper(root / name), done[-1] + 1 if done else 0)
    return out
