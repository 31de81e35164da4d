"""Which run wrote a file: the run id, made when a run starts and stamped into every input
file the checkers read as it is written.

The history's final op proves the inputs by their digests (:mod:`sealcheck.rundir.files`).
Without it — a history deleted, unusable, or cut before its end — nothing would tell a run's
own files from another run's copied in, and another run's export would be judged as this
run's (a false INVALID). So the harness makes an id when a run starts
(:func:`new_run_id`, unique without any randomness), records it in ``test.json``
(:data:`TEST_KEY`) and as the history's first op (``harness info run {"id": …}``,
:data:`RUN_OP`, index 0), and every writer of an input stamps it:

* Parquet files (``topic.parquet``, ``effects.parquet``, ``export/updates.parquet``,
  ``export/asof.parquet``) and Arrow IPC streams (``captures.arrows``, ``acks.arrows``): the
  schema's key-value metadata :data:`META_KEY` (:func:`stamp_schema`);
* JSON documents (``export/frontiers.json``, ``export/versions.json``): a reserved top-level
  key :data:`JSON_KEY` (:func:`stamp_json`), which every reader skips (:func:`unstamped`).

Writers need no plumbing: :func:`run_id` reads the id from ``test.json`` in the run directory
they write into (a user's own export calling ``write_export``, the Delta export in its child
process, get it for free); a directory without ``test.json`` (a test writing files directly)
gets no stamp. The checkers' rule for a run without a manifest:
:func:`sealcheck.checkers.load.load_run`.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from sealcheck.rundir.regular import checked, read_text

__all__ = [
    "JSON_KEY",
    "META_KEY",
    "RUN_OP",
    "TEST_JSON",
    "TEST_KEY",
    "file_run_id",
    "new_run_id",
    "recorded_id",
    "run_id",
    "stamp_json",
    "stamp_schema",
    "unstamped",
]

#: the file that says what a run was (its config, seeds, schedule), and its key holding the id
TEST_JSON, TEST_KEY = "test.json", "run_id"
#: the history's first op (``harness info run {"id": …}``, index 0)
RUN_OP = "run"
#: the key of a Parquet file's or an Arrow stream's schema metadata holding the run id
META_KEY = b"sealcheck.run"
#: the reserved top-level key of a JSON input holding the run id (readers skip it)
JSON_KEY = "_run"


def new_run_id(run_dir: Path) -> str:
    """A new run's id: its directory's test and time names, the harness's pid and the clock in
    nanoseconds (unique across runs and machines' archives without any randomness)."""
    return f"{run_dir.parent.name}/{run_dir.name}/{os.getpid()}/{time.time_ns()}"


def run_id(run_dir: Path) -> str | None:
    """The id of the run whose directory is ``run_dir``, as ``test.json`` records it: what a
    writer stamps into the file it writes there. None without one (no ``test.json``, one
    that cannot be read, or one of a run stored before run ids)."""
    try:
        return recorded_id(run_dir)
    except (OSError, ValueError):
        return None


def recorded_id(run_dir: Path) -> str | None:
    """The run id ``test.json`` in ``run_dir`` records (None: it records none); ``OSError``
    or ``ValueError`` when it cannot be read (missing, not a regular file within ``run_dir``,
    not JSON)."""
    doc = json.loads(read_text(run_dir / TEST_JSON, run_dir))
    found = doc.get(TEST_KEY) if isinstance(doc, dict) else None
    return found if isinstance(found, str) else None


def stamp_schema(schema: pa.Schema, run_dir: Path) -> pa.Schema:
    """``schema`` with the run id of ``run_dir`` in its metadata (unchanged without one)."""
    found = run_id(run_dir)
    if found is None:
        return schema
    return schema.with_metadata({**(schema.metadata or {}), META_KEY: found.encode()})


def stamp_json(doc: dict[str, Any], run_dir: Path) -> dict[str, Any]:
    """``doc`` with the run id of ``run_dir`` under :data:`JSON_KEY` (unchanged without
    one)."""
    found = run_id(run_dir)
    return doc if found is None else {**doc, JSON_KEY: found}


def unstamped(doc: Any) -> Any:
    """A JSON input's document without its run id (what its readers read)."""
    if isinstance(doc, dict) and JSON_KEY in doc:
        return {k: v for k, v in doc.items() if k != JSON_KEY}
    return doc


def file_run_id(path: Path, root: Path) -> str | None:
    """The run id stamped into an input file of the run directory ``root`` (by its suffix:
    Parquet, Arrow IPC stream or JSON), reading only its schema or its document; None when it
    carries none. Raises :class:`~sealcheck.rundir.regular.NotRegularFile` (before opening
    it) for a file that is not a regular file within ``root``, ``OSError``, ``ValueError`` or
    ``pyarrow.ArrowException`` when it cannot be read as its suffix says."""
    checked(path, root)
    if path.suffix == ".json":
        doc = json.loads(path.read_text())
        found = doc.get(JSON_KEY) if isinstance(doc, dict) else None
        return found if isinstance(found, str) else None
    if path.suffix == ".arrows":
        with pa.OSFile(str(path), "rb") as source:
            meta = pa.ipc.open_stream(source).schema.metadata
    else:
        meta = pq.read_schema(path).metadata
    value = (meta or {}).get(META_KEY)
    return value.decode("utf-8", "replace") if value is not None else None
