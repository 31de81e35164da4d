"""Opening a run directory for the checkers: the history first, every input file checked
against the manifest in its final op (without one, by the run id stamped into it), the big
inputs left as lazy scans (:class:`sealcheck.checkers.inputs.RunData`)."""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pyarrow as pa

from sealcheck.checkers.inputs import RunData
from sealcheck.checkers.schemas import EFFECTS_SCHEMA, TOPIC_SCHEMA, UPDATES_SCHEMA
from sealcheck.checkers.steps import load as load_steps
from sealcheck.rundir import files, runid
from sealcheck.rundir.captures import CAPTURES
from sealcheck.rundir.effects import EFFECTS
from sealcheck.rundir.files import VERSION_EFFECTS
from sealcheck.rundir.history import History, HistoryError
from sealcheck.rundir.regular import RESTORE, NotRegularFile
from sealcheck.rundir.states import StateRecord, read_states
from sealcheck.rundir.version_effects import SCHEMA, VERSIONED_SCHEMA, held_columns


class RunInputError(ValueError):
    """A run directory lacks a file the checkers need; the message says which and why, and
    :attr:`causes` what the history says went wrong first (the system never started, its
    export failed), if anything."""

    def __init__(self, message: str, causes: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.causes = causes


def load_run(run_dir: Path) -> RunData:
    """Open a run directory: read the history and check every input file against the
    manifest in its final op.

    Raises :class:`RunInputError` (one line naming the file and the cause) when the topic or
    the store's export is missing or cannot be read as its format says. The manifest is the
    closed list of what checkers read: a required input it does not list (the topic, the
    export, and ``acks.arrows`` when it exists) refuses the run (:attr:`RunData.refusals`,
    nothing read); an optional one (``export/asof.parquet``,
    ``export/versions.json``, ``effects.parquet``: :mod:`sealcheck.rundir.effects`) is read only
    when listed; any other file of the export is
    only named in :attr:`RunData.notes`. The big inputs stay lazy scans;
    :meth:`RunData.prepare` (or the first checker) reads them.

    The digests of the files under 64 MiB (the frontiers, the updates) are checked before
    anything is read; the big ones' in a thread while the inputs are read. The captured steps
    are read from disk once (:func:`sealcheck.rundir.files.hold`: no further than the size the
    manifest records), and their digest is of the bytes parsed. A file whose digest
    differs refuses the run just the same: nothing is judged, and whatever reading it raised
    is not reported (it is refused, not unreadable).

    Without a manifest (the history is missing, unusable, or cut before its final op) the
    digests prove nothing, so every input a checker would read — the required ones and each
    optional one present — must carry the run id stamped into it as it was written
    (:mod:`sealcheck.rundir.runid`), and every one the same: the id of the history's first op
    when the history is usable, and ``test.json``'s when that file is there. A file that does
    not is refused, one line each (:func:`_owned`): nothing is judged, never another run's
    files as this run's. A run whose files are all its own is judged with a history that
    cannot make it valid (:meth:`History.problems`).

    No file that is not a regular file within the run directory (a FIFO, a device, a symlink
    out of it) is opened: it is refused in one line (:mod:`sealcheck.rundir.regular`).
    """
    path = run_dir / "history.jsonl"
    history = _history(path, lambda: History.load(path, acks=False))
    # acks.arrows (~1.5 s to decompress at 10M writes) is read beside the other files
    with ThreadPoolExecutor(2, thread_name_prefix="load") as pool:
        acks = pool.submit(_history, path, history.with_ack_file)
        try:
            run: RunData | RunInputError = _open(run_dir, history, pool)
        except RunInputError as exc:
            run = exc
        read = acks.result()
        if read is not history:  # acks.arrows cannot be read: no usable history, as if
            return _open(run_dir, read, pool)  # History.load had said so
    if isinstance(run, RunInputError):
        raise run
    return run


def _history(path: Path, read: Callable[[], History]) -> History:
    """What ``read`` gives, or an empty history saying why the history cannot be used."""
    try:
        return read()
    except HistoryError as exc:
        return History.empty(unusable=str(exc))
    except (OSError, pl.exceptions.PolarsError) as exc:  # unreadable, or not text at all
        return History.empty(unusable=f"{path} cannot be read ({files.why_unreadable(exc)})")


def _open(run_dir: Path, history: History, pool: ThreadPoolExecutor) -> RunData:
    """:func:`load_run` with the history read: the digests of the big files are taken in
    ``pool``."""
    notes: list[str] = []
    if history.torn_tail:
        notes.append(
            f"history.jsonl: a torn last line ({history.torn_tail} bytes) was skipped: the "
            "harness died while writing it"
        )
    final = history.final()
    export = files.Export.of(run_dir)  # export/, or persist/ in a run stored before
    recorded: dict[str, object] = {}
    proven: list[str] = []  # why the files are not the run's: nothing is read, then
    if final is not None:
        recorded = dict((final.get("value") or {}).get("files") or {})
    else:  # no digest proves anything: the run id stamped into each file must
        recorded, proven = _owned(run_dir, history, export)
    # The captured steps (the biggest file) are read once, no further than the size the
    # manifest records: their digest is of the very bytes parsed. Of the rest, the small files
    # (the frontiers, the updates) are proven before anything is read: what the reading
    # allocates follows from them. The big ones' digests (~2 s for 1.6 GB) are taken beside
    # the reading; nothing read is judged unless every file proves the run's.
    held: dict[str, bytes] = {}
    if CAPTURES in recorded and not proven:
        got = files.hold(run_dir, CAPTURES, recorded[CAPTURES])
        if isinstance(got, bytes):
            held[CAPTURES] = got
        else:
            proven.append(got)  # not read: not proven again
    manifest = recorded if final is not None else {}
    checked = {rel: e for rel, e in manifest.items() if rel != CAPTURES or held}
    big = {rel: e for rel, e in checked.items() if _size(e) >= _BIG}
    proven += files.verify(run_dir, {rel: e for rel, e in checked.items() if rel not in big}, held)
    digests = pool.submit(files.verify, run_dir, big, held)
    for rel, what in (
        (files.TOPIC, "the harness dumps the topic there after the final phase"),
        (export.updates, "the harness exports the system's store there at the end of a run"),
        (export.frontiers, "the export writes the collections' uppers there"),
    ):
        if not (run_dir / rel).exists():
            raise RunInputError(
                f"{run_dir / rel} is missing: {what}; a run that died before it cannot be judged",
                tuple(history.harness_failures()),
            )
    unlisted: list[str] = []
    if final is not None:  # the manifest is the closed list of what a checker may read
        acks = [files.ACKS] if (run_dir / files.ACKS).exists() else []
        unlisted = [
            f"{rel} is not in the manifest of the history's final op: it cannot be proven "
            "to be the run's, so nothing is judged; re-run the test"
            for rel in (*export.inputs, *acks)
            if rel not in recorded
        ]
        notes += [
            f"{rel} is not in the manifest of the history's final op: no checker read it"
            for rel in files.unlisted(run_dir, recorded)
        ]
    read: RunData | Exception | None = None
    if not unlisted and not proven:
        try:
            read = _read(run_dir, history, recorded, export, held.get(CAPTURES))
        except Exception as exc:  # a refusal, if any, is what is said: kept until known
            read = exc
    refusals = proven + digests.result() + unlisted
    if refusals or read is None:  # nothing is judged from files that are not the run's
        empty = pl.DataFrame(schema=TOPIC_SCHEMA), pl.DataFrame(schema=UPDATES_SCHEMA)
        return RunData(*empty, {}, {}, history, refusals=refusals, notes=notes)
    if isinstance(read, Exception):
        raise read
    read.notes = notes
    return read


_BIG = 64 << 20  # bytes: files whose digest is taken beside the reading


def _owned(
    run_dir: Path, history: History, export: files.Export
) -> tuple[dict[str, object], list[str]]:
    """Without a manifest: the inputs a checker would read (the required ones present, and
    every optional one present), as a manifest listing them with nothing to check, and one
    line for each that cannot be proven to be this run's by the run id stamped into it —
    that carries none, or another than the history's first op, ``test.json``, or (with
    neither) the other inputs."""
    optional: tuple[str, ...] = (export.asof, export.versions, EFFECTS, VERSION_EFFECTS)
    optional += (export.versioned, CAPTURES, files.ACKS)
    present = [r for r in (*export.inputs, *optional) if os.path.lexists(run_dir / r)]
    refusals: list[str] = []
    claims: list[tuple[str, str | None]] = []  # who says which run this is
    if history.unusable is None:
        claims.append(("the history", history.run_id()))
    test = run_dir / runid.TEST_JSON
    if os.path.lexists(test):
        try:  # a FIFO is not opened: reading it never ends
            claims.append((runid.TEST_JSON, runid.recorded_id(run_dir)))
        except NotRegularFile as exc:
            refusals.append(str(exc))
        except (OSError, ValueError) as exc:
            refusals.append(
                f"{test} cannot be read ({files.why_unreadable(exc)}): without the "
                f"history's final op it says which run's files these must be; {RESTORE}"
            )
    stamps: dict[str, str] = {}
    for rel in present:
        found = _stamp(run_dir, rel)
        if isinstance(found, _Refused):
            refusals.append(found.why)
        elif found is not None:
            stamps[rel] = found
    ids = sorted(set(stamps.values()))
    if not claims and len(ids) > 1:  # neither says which run: the files must be of one
        refusals += [
            f"{rel} is of run {stamp}, the other inputs of run "
            f"{', '.join(i for i in ids if i != stamp)}: they are not of one run; {RESTORE}"
            for rel, stamp in stamps.items()
        ]
    for rel, stamp in stamps.items():
        other = next(((who, run) for who, run in claims if run != stamp), None)
        if other is not None:
            who, run = other
            said = f"{who} is of run {run}" if run is not None else f"{who} records no run id"
            refusals.append(
                f"{rel} is of run {stamp}, {said}: another run's file would be judged as "
                f"this run's; {RESTORE}"
            )
    return {rel: {} for rel in present}, refusals


@dataclass(frozen=True)
class _Refused:
    """Why an input has no run id that counts (one line naming it)."""

    why: str


def _stamp(run_dir: Path, rel: str) -> str | _Refused | None:
    """The run id stamped into input ``rel``, or why it has none that counts (it is not a
    regular file within the run directory, cannot be read, or carries none); None when
    nothing is there (a missing input is named where it is needed)."""
    try:
        found = runid.file_run_id(run_dir / rel, run_dir)
    except NotRegularFile as exc:
        return _Refused(str(exc))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, pa.ArrowException) as exc:  # ArrowInvalid is a ValueError
        return _Refused(
            f"{rel} cannot be read ({files.why_unreadable(exc)}): without the history's final "
            f"op only the run id stamped into it could prove it is this run's; {RESTORE}"
        )
    if found is None:
        return _Refused(
            f"{rel} carries no run id (written before run ids, or not by the harness): "
            f"without the history's final op nothing proves it is this run's; {RESTORE}"
        )
    return found


def _size(entry: object) -> int:
    """The recorded size of a manifest entry (0 when it records none)."""
    size = entry.get("bytes") if isinstance(entry, dict) else None
    return size if isinstance(size, int) else 0


def _read(
    run_dir: Path,
    history: History,
    recorded: dict[str, object],
    export: files.Export,
    captured: bytes | None,
) -> RunData:
    """The run's inputs as :class:`RunData` (big inputs as lazy scans; the captured steps from
    their bytes, ``captured``, None when the manifest lists none); a file that cannot be read
    as its format says is a :class:`RunInputError` naming it."""
    try:
        files.check_parquet(run_dir / files.TOPIC, TOPIC_SCHEMA.names())
        files.check_parquet(run_dir / export.updates, UPDATES_SCHEMA.names())
        if export.asof in recorded:
            files.check_parquet(run_dir / export.asof)
        if EFFECTS in recorded:
            files.check_parquet(run_dir / EFFECTS, EFFECTS_SCHEMA.names())
        for rel, names in ((VERSION_EFFECTS, SCHEMA), (export.versioned, VERSIONED_SCHEMA)):
            if rel in recorded:
                files.check_parquet(run_dir / rel, names.names)
        frontiers = files.read_frontiers(run_dir / export.frontiers)
    except files.InputFileError as exc:
        raise RunInputError(str(exc), tuple(history.harness_failures())) from None
    topic = pl.scan_parquet(run_dir / files.TOPIC).cast(TOPIC_SCHEMA)
    updates = pl.scan_parquet(run_dir / export.updates).cast(UPDATES_SCHEMA)
    try:
        judged, sinces, steps = load_steps(
            run_dir, captured, history.ops, updates, frontiers.uppers, frontiers.sinces
        )
    except files.InputFileError as exc:
        raise RunInputError(str(exc), tuple(history.harness_failures())) from None
    states = (
        read_states(run_dir / export.versions, run_dir) if export.versions in recorded else None
    )
    return RunData(
        topic,
        judged,
        frontiers.uppers,
        sinces,
        history,
        [],
        [],
        pl.scan_parquet(run_dir / export.asof) if export.asof in recorded else None,
        _labels(run_dir, states) if export.versions in recorded else {},
        steps,
        pl.scan_parquet(run_dir / EFFECTS).cast(EFFECTS_SCHEMA) if EFFECTS in recorded else None,
        frontiers.unkept,
        frontiers.unaligned,
        states,
        _scan(run_dir, VERSION_EFFECTS, recorded),
        _scan(run_dir, export.versioned, recorded),
        held_columns(run_dir / export.versioned) if export.versioned in recorded else frozenset(),
    )


def _scan(run_dir: Path, rel: str, recorded: dict[str, object]) -> pl.LazyFrame | None:
    """An optional Parquet input, when the manifest lists it."""
    return pl.scan_parquet(run_dir / rel) if rel in recorded else None


def _labels(run_dir: Path, states: StateRecord | None) -> dict[int, str]:
    """What the system calls each step: its states' batches when the export records them (read
    once, with the states), else the table versions of each batch."""
    return states.labels() if states is not None else files.step_labels(run_dir)
