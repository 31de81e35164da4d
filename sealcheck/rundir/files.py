"""The files of a run directory that the checkers read, their formats, and proof that they
are the ones the run produced.

* ``topic.parquet``: the input topic as dumped (:class:`TopicRecord`, :func:`write_topic`).
* ``export/updates.parquet`` + ``export/frontiers.json``: a system under test's persisted
  output in one format whatever it is (:func:`write_export`), written by its descriptor's
  export (``sealcheck.systems``) at the end of a run. Runs stored before the export was named
  ``export/`` keep it in ``persist/``: :class:`Export` says where it is in one run directory.
* The *manifest*: rows and SHA-256 of each input file. The harness records it in the history's
  final op (:data:`sealcheck.rundir.history.FINAL_OP`) right after the dumps; :func:`verify`
  recomputes
  it before anything is judged and names every file that no longer matches.
* Every file is stamped with the run's id as it is written (:mod:`sealcheck.rundir.runid`),
  and read only when it is a regular file within the run directory
  (:mod:`sealcheck.rundir.regular`).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from sealcheck.rundir.names import EXPORT_DIR, export_dir
from sealcheck.rundir.regular import not_regular, read_text
from sealcheck.rundir.runid import stamp_json, stamp_schema, unstamped

TOPIC = "topic.parquet"
#: the sealed steps the harness captured during the run (:mod:`sealcheck.rundir.captures`)
CAPTURES = "captures.arrows"
#: the acknowledged writes, beside the history (:mod:`sealcheck.rundir.acks`)
ACKS = "acks.arrows"
#: what each record should do to the output, by the system's own mapping
#: (:mod:`sealcheck.rundir.effects`)
EFFECTS = "effects.parquet"
#: per record and version, the columns the versions of a system do not all write
#: (:mod:`sealcheck.rundir.version_effects`)
VERSION_EFFECTS = "effects-versions.parquet"


@dataclass(frozen=True)
class Export:
    """The files of the export in one run directory, relative to it, under :attr:`folder`
    (``export``; ``persist`` in runs stored before the rename: :meth:`of`). Whatever else an
    export copies of the store into that folder (e.g. a SQLite file) is recorded in the
    manifest too, so the export and the copy it was made beside are proven to be of one
    moment."""

    folder: str = EXPORT_DIR

    @staticmethod
    def of(run_dir: Path) -> Export:
        """Where the export is in ``run_dir`` (:func:`sealcheck.rundir.names.export_dir`)."""
        return Export(export_dir(run_dir))

    @property
    def updates(self) -> str:
        """Every persisted update (``collection, key, value, ts, diff``)."""
        return f"{self.folder}/updates.parquet"

    @property
    def frontiers(self) -> str:
        """``{collection: {"upper": u, "since": s}}``."""
        return f"{self.folder}/frontiers.json"

    @property
    def asof(self) -> str:
        """Optional: the store read as of some sealed steps through a second path
        (``collection, ts, key, value``), for systems whose export offers one (``as_of``)."""
        return f"{self.folder}/asof.parquet"

    @property
    def versioned(self) -> str:
        """Optional: the updates of the ``data`` columns a system's versions do not all write
        (``key, value, ts, diff``), split off :attr:`updates`
        (:mod:`sealcheck.rundir.version_effects`)."""
        return f"{self.folder}/versioned.parquet"

    @property
    def versions(self) -> str:
        """Optional: a micro-batch system's table versions per batch, or the batches each state
        of an output without bindings follows (:mod:`sealcheck.rundir.states`)
        (:func:`step_labels`)."""
        return f"{self.folder}/versions.json"

    @property
    def inputs(self) -> tuple[str, str, str]:
        """Every file a checker must read, relative to the run directory."""
        return (TOPIC, self.updates, self.frontiers)


_NEW = Export()
#: the export's files as a run writes them now (a reader asks :meth:`Export.of` instead)
UPDATES, FRONTIERS, ASOF, VERSIONS = _NEW.updates, _NEW.frontiers, _NEW.asof, _NEW.versions
VERSIONED = _NEW.versioned


@dataclass(frozen=True, order=True)
class TopicRecord:
    """One record of the dumped input topic."""

    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    #: its Kafka headers, (name, bytes) pairs in order (none: empty)
    headers: tuple[tuple[str, bytes], ...] = ()


#: a record's Kafka headers in ``topic.parquet``: (name, value) pairs, null when it had none
HEADERS = pa.list_(pa.struct([("name", pa.string()), ("value", pa.binary())]))

#: the columns of ``topic.parquet`` (:func:`write_topic`); a dump written before headers were
#: kept has the first four
TOPIC_COLUMNS = pa.schema(
    [
        ("partition", pa.int64()),
        ("offset", pa.int64()),
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("headers", HEADERS),
    ]
)


def headers_column(rows: Sequence[Sequence[tuple[str, bytes]] | None]) -> pa.Array:
    """The ``headers`` column for records' headers (None or empty: null)."""
    return pa.array([[{"name": n, "value": v} for n, v in h] if h else None for h in rows], HEADERS)


def headers_of(cell: Sequence[Mapping[str, Any]] | None) -> tuple[tuple[str, bytes], ...]:
    """One record's headers from its ``headers`` cell (as pyarrow gives it to Python; a
    header without a value: empty bytes)."""
    return tuple((str(h["name"]), bytes(h["value"] or b"")) for h in cell or ())


def write_topic(records: Sequence[TopicRecord] | pa.Table, path: Path) -> None:
    """Write a topic dump as the checkers read it (``topic.parquet``: :data:`TOPIC_COLUMNS`;
    null for a null key or a tombstone), from records or from a table of those columns
    (``sealcheck.infra.topic.read_topic``'s), stamped with the run id of the directory it is
    written into (:mod:`sealcheck.rundir.runid`)."""
    if isinstance(records, pa.Table):
        if "headers" not in records.column_names:  # read by a reader that keeps none
            records = records.append_column("headers", pa.nulls(len(records), HEADERS))
        table = records.select(TOPIC_COLUMNS.names).cast(TOPIC_COLUMNS)
    else:
        table = pa.table(
            {
                "partition": pa.array([r.partition for r in records], pa.int64()),
                "offset": pa.array([r.offset for r in records], pa.int64()),
                "key": pa.array([r.key for r in records], pa.binary()),
                "value": pa.array([r.value for r in records], pa.binary()),
                "headers": headers_column([r.headers for r in records]),
            },
            schema=TOPIC_COLUMNS,
        )
    table = table.replace_schema_metadata(stamp_schema(TOPIC_COLUMNS, path.parent).metadata)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")  # a write cut short leaves no topic.parquet
    pq.write_table(table, tmp)
    os.replace(tmp, path)


def topic_records(table: pa.Table) -> list[TopicRecord]:
    """A table of :data:`TOPIC_COLUMNS` as records, in its order."""
    cols = [table.column(n).to_pylist() for n in TOPIC_COLUMNS.names[:4]]
    heads = table.column("headers").to_pylist() if "headers" in table.column_names else None
    out = [TopicRecord(*row) for row in zip(*cols, strict=True)]
    if heads is None:
        return out
    return [
        TopicRecord(r.partition, r.offset, r.key, r.value, headers_of(h))
        for r, h in zip(out, heads, strict=True)
    ]


#: the columns of the export (and of the captured steps, :mod:`sealcheck.rundir.captures`)
EXPORT_SCHEMA = pa.schema(
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


def hold(run_dir: Path, rel: str, entry: Any) -> bytes | str:
    """A recorded input's bytes, read once, for a reader to parse and :func:`verify` to prove
    (``held``): what is judged is then exactly what was proven, where a file read twice could
    change in between. Or one line saying why nothing was read: the file is missing, cannot be
    read, or is not the size the manifest records (nothing past that size is read, so what
    the reading allocates follows from the manifest)."""
    want = entry if isinstance(entry, dict) else {}
    size = want.get("bytes")
    refused = not_regular(run_dir / rel, run_dir)
    if refused is not None:  # a FIFO or a device is not opened: reading it never ends
        return refused
    try:
        with open(run_dir / rel, "rb") as fh:
            data = fh.read(size + 1 if isinstance(size, int) and size >= 0 else -1)
    except FileNotFoundError:
        return _missing(rel, want)
    except OSError as exc:  # unreadable, or a directory where the file was
        return _unreadable(rel, exc)
    if isinstance(size, int) and len(data) != size:
        now = f"more than {size:,}" if len(data) > size else f"{len(data):,}"
        return (
            f"{rel} is not the file the run produced ({now} bytes now, {size:,} recorded): "
            "judging it would judge other data; restore the original or re-run the test"
        )
    return data


def _missing(rel: str, want: dict[str, Any]) -> str:
    return (
        f"{rel} is missing, but the history records it ({want.get('rows')} rows): restore it "
        "from the run, or re-run the test"
    )


def _unreadable(rel: str, exc: OSError) -> str:
    return (
        f"{rel} cannot be read ({why_unreadable(exc)}): make it readable or restore it from "
        "the run, then check again"
    )


def _rows(path: Path, data: bytes | None = None) -> int | None:
    """Rows of a Parquet file or an Arrow IPC stream (or of its bytes, ``data``, already
    read), entries of a JSON document; None for other files and for a file that cannot be
    read as its suffix says (truncated, corrupt, unreadable): the rows are for people, the
    SHA-256 is the proof."""
    try:
        if data is not None:
            if path.suffix != ".arrows":
                return None
            return int(pa.ipc.open_stream(pa.py_buffer(data)).read_all().num_rows)
        if path.suffix == ".parquet":
            return int(pq.ParquetFile(path).metadata.num_rows)
        if path.suffix == ".json":
            doc = unstamped(json.loads(path.read_text()))
            return len(doc) if isinstance(doc, dict | list) else 1
        if path.suffix == ".arrows":  # an Arrow IPC stream (captured steps, acknowledgements)
            with pa.OSFile(str(path), "rb") as source:
                return int(pa.ipc.open_stream(source).read_all().num_rows)
    except (OSError, ValueError, pa.ArrowException):  # ArrowInvalid is a ValueError too
        return None
    return None


def why_unreadable(exc: BaseException) -> str:
    """An exception met reading an input, as a short cause for a one-line message: its type
    and its first line (a PermissionError, a truncated Parquet footer, bad JSON)."""
    if isinstance(exc, OSError) and exc.strerror:
        return f"{type(exc).__name__}: {exc.strerror}"
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {first[:200]}" if first else type(exc).__name__


def describe(run_dir: Path) -> dict[str, dict[str, Any]]:
    """Rows, bytes and SHA-256 of the topic dump, the effects (when the system states its
    own mapping: :mod:`sealcheck.rundir.effects`), the captured steps (when the system offers
    them: :mod:`sealcheck.rundir.captures`), the acknowledged writes (when any:
    :mod:`sealcheck.rundir.acks`) and every file of the export in ``run_dir`` (the manifest
    the history's final op records)."""
    folder = run_dir / Export.of(run_dir).folder
    paths = [run_dir / TOPIC, run_dir / EFFECTS, run_dir / VERSION_EFFECTS]
    paths += [run_dir / CAPTURES, run_dir / ACKS]
    paths += sorted(folder.glob("*"))
    out: dict[str, dict[str, Any]] = {}
    for path in paths:
        if path.is_file() and not path.name.endswith(".tmp"):
            rel = str(path.relative_to(run_dir))
            out[rel] = {"rows": _rows(path), "bytes": path.stat().st_size, "sha256": sha256(path)}
    return out


def verify(
    run_dir: Path, recorded: dict[str, Any], held: Mapping[str, bytes] | None = None
) -> list[str]:
    """Every recorded input that is missing, unreadable or differs now (empty: all match),
    one line each naming the file; never raises for what the files hold. A file whose bytes
    were already read (``held``, by :func:`hold`) is proven by those bytes."""
    problems: list[str] = []
    for rel, entry in sorted(recorded.items()):
        want = entry if isinstance(entry, dict) else {}
        path = run_dir / rel
        data = held.get(rel) if held is not None else None
        if data is not None:
            have = hashlib.sha256(data).hexdigest()  # releases the GIL while it hashes
        elif (refused := not_regular(path, run_dir)) is not None:  # hashing it never ends
            problems.append(refused)
            continue
        elif not path.exists():
            problems.append(_missing(rel, want))
            continue
        else:
            try:
                have = sha256(path)
            except OSError as exc:  # unreadable, or a directory where the file was
                problems.append(_unreadable(rel, exc))
                continue
        if have != want.get("sha256"):
            rows, was = _rows(path, data), want.get("rows")
            now = "not readable as its format now" if rows is None else f"{rows} rows now"
            counts = f"; {now}, {was} rows recorded" if was is not None else ""
            problems.append(
                f"{rel} is not the file the run produced (SHA-256 {have[:12]}… now, "
                f"{str(want.get('sha256'))[:12]}… recorded{counts}): judging it would judge "
                "other data; restore the original or re-run the test"
            )
    return problems


def write_export(
    run_dir: Path,
    frontiers: dict[str, dict[str, int]],
    batches: Iterable[Sequence[tuple[Any, ...]]],
) -> None:
    """Write a system under test's persisted output into ``run_dir``: ``export/updates.parquet``
    from batches of ``(collection, key, value, ts, diff)`` rows (atomically replaced) and
    ``export/frontiers.json`` (``{collection: {"upper": u, "since": s}}``). Every export goes
    through here, so the checkers read one format whatever the system under test; both are
    stamped with the run id of ``run_dir`` (:mod:`sealcheck.rundir.runid`)."""
    updates = run_dir / UPDATES
    updates.parent.mkdir(parents=True, exist_ok=True)
    tmp = updates.with_suffix(".parquet.tmp")
    with pq.ParquetWriter(tmp, stamp_schema(EXPORT_SCHEMA, run_dir)) as writer:
        for rows in batches:
            cols = list(zip(*rows, strict=True))
            arrays = [pa.array(c) for c in cols]
            writer.write_table(pa.Table.from_arrays(arrays, schema=EXPORT_SCHEMA))
    tmp.replace(updates)
    doc = stamp_json(dict(frontiers), run_dir)
    (run_dir / FRONTIERS).write_text(json.dumps(doc, indent=1, sort_keys=True))


def step_labels(run_dir: Path) -> dict[int, str]:
    """Step -> "batch N: data v5, errors v5": the table versions that belong to each step,
    from :attr:`Export.versions` (empty without it, or when it is not of that shape), for
    naming them beside an anomaly's step. (An export of states without bindings names its
    states instead: :meth:`sealcheck.rundir.states.StateRecord.labels`.)"""
    path = run_dir / Export.of(run_dir).versions
    try:
        doc = json.loads(read_text(path, run_dir))
        found: dict[int, list[str]] = defaultdict(list)
        for table, vs in sorted(doc.get("tables", {}).items()):
            for v, meta in sorted(vs.items(), key=lambda kv: int(kv[0])):
                if meta.get("batch") is not None:
                    found[int(meta["batch"])].append(f"{table} v{v}")
    except (OSError, ValueError, TypeError, AttributeError):  # labels only: none is fine
        return {}
    return {b: f"batch {b}: " + ", ".join(names) for b, names in found.items()}


def unlisted(run_dir: Path, recorded: dict[str, Any]) -> list[str]:
    """The files of the export (``export/*``) the manifest does not list: no checker reads
    them (the manifest is the closed list of what may be judged)."""
    folder = run_dir / Export.of(run_dir).folder
    found = sorted(folder.glob("*")) if folder.is_dir() else []
    rels = (str(p.relative_to(run_dir)) for p in found if not p.name.endswith(".tmp"))
    return [rel for rel in rels if rel not in recorded]


class InputFileError(ValueError):
    """An input file cannot be read as its format says; the message is one line naming the
    file, the cause and what to do."""


def _bad(path: Path, cause: str) -> InputFileError:
    return InputFileError(
        f"{path}: {cause}: restore it from the run (or make it readable), or re-run the test"
    )


def check_parquet(path: Path, columns: Iterable[str] = ()) -> None:
    """Raise :class:`InputFileError` unless ``path`` is a readable Parquet file (its footer
    and schema: a truncated file fails here) holding ``columns``."""
    try:
        names = set(pq.read_schema(path).names)
    except (OSError, ValueError, pa.ArrowException) as exc:
        raise _bad(path, f"not a readable Parquet file ({why_unreadable(exc)})") from None
    missing = [c for c in columns if c not in names]
    if missing:
        raise _bad(path, f"no column {', '.join(missing)} (it holds {', '.join(sorted(names))})")


@dataclass(frozen=True)
class Frontiers:
    """:attr:`Export.frontiers` as read once (:func:`read_frontiers`)."""

    #: each collection's upper and since
    uppers: dict[str, int]
    sinces: dict[str, int]
    #: the collections the system does not keep (``"kept": false``: an output observed from
    #: outside keeps no ``bindings``)
    unkept: frozenset[str]
    #: the collections whose states are not aligned with ``data``'s (``"aligned": false``:
    #: tables judged from their commits alone, whose commits do not say which batch they
    #: belong to, so a state of one may fall between two commits of the other)
    unaligned: frozenset[str]


def read_frontiers(path: Path) -> Frontiers:
    """:attr:`Export.frontiers` (``{collection: {"upper": u, "since": s, "kept"?: false,
    "aligned"?: false}}``), read once; :class:`InputFileError` when it is unreadable, not JSON,
    or not of that shape."""
    try:
        doc = unstamped(json.loads(path.read_text()))
    except (OSError, ValueError) as exc:  # UnicodeDecodeError and JSONDecodeError included
        raise _bad(path, f"not a readable JSON document ({why_unreadable(exc)})") from None
    if not isinstance(doc, dict):
        raise _bad(path, f'a JSON {type(doc).__name__}, not {{collection: {{"upper": u, ...}}}}')
    uppers: dict[str, int] = {}
    sinces: dict[str, int] = {}
    for name, f in doc.items():
        for key, into in (("upper", uppers), ("since", sinces)):
            value = f.get(key) if isinstance(f, dict) else None
            if not isinstance(value, int) or isinstance(value, bool):
                raise _bad(path, f"{name}.{key} is {value!r}, not a whole number")
            into[str(name)] = value

    def said(flag: str) -> frozenset[str]:
        return frozenset(n for n, f in doc.items() if f.get(flag) is False)

    return Frontiers(uppers, sinces, said("kept"), said("aligned"))
