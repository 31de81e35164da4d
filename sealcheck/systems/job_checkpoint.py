"""A job's checkpoint and directory read from outside: which batch it is between, whether a
batch is in flight, when it last wrote — for outputs without bindings (SQL tables, Kafka
topics, Delta tables read alone), which take states between batches, record the checkpoint's
batches at each, and settle from the directory's writes (:mod:`sealcheck.systems.job`)."""

from __future__ import annotations

import dataclasses
import os
import re
import time
from collections.abc import Iterable
from pathlib import Path

from sealcheck.core.windows import CrashWindow
from sealcheck.systems.api import Progress
from sealcheck.systems.outputs import Output


def newest_write(root: Path) -> float:
    """The newest modification time (``time.time()``) of anything under ``root`` (0 when
    there is nothing)."""
    newest, todo = 0.0, [root]
    while todo:
        try:
            entries = list(os.scandir(todo.pop()))
        except OSError:  # removed while walked
            continue
        for entry in entries:
            try:
                newest = max(newest, entry.stat(follow_symlinks=False).st_mtime)
                if entry.is_dir(follow_symlinks=False):
                    todo.append(Path(entry.path))
            except OSError:
                continue
    return newest


def _newest_opening(root: Path, window: CrashWindow) -> str | None:
    """The ``{n}`` of the newest file that opens ``window`` (None: none yet, or a window not
    told by paired files)."""
    if not paired(window) or window.opens_in is None:
        return None
    try:
        names = [m.group(1) for f in os.listdir(root / window.opens_in)
                 if (m := re.fullmatch(window.opens, f)) and m.re.groups]  # fmt: skip
    except OSError:
        return None
    return max(names, key=lambda n: (len(n), n), default=None)


def in_flight(root: Path, window: CrashWindow) -> bool:
    """Whether ``window`` is open now: the newest file that opens it (by its ``{n}``) has no
    closing file yet. Only windows told by files whose closing names its opening's ``{n}``
    (a checkpoint's ``offsets/N`` and ``commits/N``) can say."""
    newest = _newest_opening(root, window)
    closing = window.closing(newest) if newest is not None else None
    if closing is None or window.closes_in is None:
        return False
    try:
        closed = os.listdir(root / window.closes_in)
    except OSError:
        return False
    return not any(closing.fullmatch(f) for f in closed)


def batch_boundary(root: Path, windows: Iterable[CrashWindow]) -> str | None:
    """Which batch the job is between (the newest opening of each of ``windows`` that a
    closing file names, joined: a token that changes when a batch is planned), or None while
    a batch is in flight (:func:`in_flight`) — for an output that takes states only between
    batches (``between_batches``)."""
    told = [w for w in windows if paired(w)]
    if any(in_flight(root, w) for w in told):
        return None
    return "/".join(_newest_opening(root, w) or "" for w in told)


class JobCheckpoint:
    """A job's checkpoint as the first of its windows told by paired files names it (a
    checkpoint's ``offsets/N`` and ``commits/N``): the newest batch committed and the newest
    planned, each one listing of its folder (an output asks for the first before it reads and
    the second after, 4 times a second) — what an output without bindings records at each state
    it takes (:class:`sealcheck.rundir.states.StateBatchRecorder`)."""

    def __init__(self, root: Path, window: CrashWindow) -> None:
        assert window.opens_in is not None and window.closes_in is not None  # paired
        self.opens_in, self.closes_in = root / window.opens_in, root / window.closes_in
        self._opens = re.compile(window.opens)
        self._closes = re.compile(str(window.closes).replace("{n}", r"(\d+)"))

    @staticmethod
    def of(root: Path, windows: Iterable[CrashWindow]) -> JobCheckpoint | None:
        """The checkpoint the first of ``windows`` told by paired files names (None: none)."""
        window = next((w for w in windows if paired(w)), None)
        return JobCheckpoint(root, window) if window is not None else None

    def committed(self) -> int | None:
        """The newest ``commits/N`` (None: none yet, or not a batch number)."""
        return _newest_number(self.closes_in, self._closes)

    def planned(self) -> int | None:
        """The newest ``offsets/N`` (None: none yet, or not a batch number)."""
        return _newest_number(self.opens_in, self._opens)


def checkpoint_batches(root: Path, windows: Iterable[CrashWindow]) -> tuple[int | None, int | None]:
    """The newest batch committed and the newest planned (:class:`JobCheckpoint`; None, None
    without a window told by paired files)."""
    checkpoint = JobCheckpoint.of(root, windows)
    return (None, None) if checkpoint is None else (checkpoint.committed(), checkpoint.planned())


def watch_checkpoint(out: Output, root: Path, windows: Iterable[CrashWindow]) -> None:
    """Have an output that takes states (SQL tables, Kafka topics:
    :meth:`~sealcheck.systems.outputs.Output.watch_checkpoint`) record at each the job's newest
    committed and planned batches, when ``windows`` (the descriptor's) include one told by the
    checkpoint's paired files (:class:`JobCheckpoint`); otherwise its states name no batch."""
    checkpoint = JobCheckpoint.of(root, windows)
    if checkpoint is not None:
        out.watch_checkpoint(checkpoint)


def _newest_number(folder: Path, pattern: re.Pattern[str]) -> int | None:
    """The largest first group of ``pattern`` over the names in ``folder`` that is a number
    (None: none, or the folder cannot be listed)."""
    try:
        names = os.listdir(folder)
    except OSError:
        return None
    found = [m.group(1) for f in names if (m := pattern.fullmatch(f)) and m.re.groups]
    return max((int(n) for n in found if n.isdigit()), default=None)


def paired(window: CrashWindow) -> bool:
    """Whether ``window`` opens and closes on files whose closing names its opening's
    ``{n}`` (a checkpoint's ``offsets/N`` and ``commits/N``)."""
    return (
        window.opens_in is not None and window.closes_in is not None and "{n}" in str(window.closes)
    )


def settling(
    progress: Progress | None, root: Path, windows: Iterable[CrashWindow]
) -> Progress | None:
    """``progress`` of an output without bindings with its last change moved to the newest
    write under the job's directory ``root`` — to *now* while one of ``windows`` is open (a
    batch in flight); any other progress as it is (:meth:`Progress.settled`)."""
    if progress is None or progress.settle_s is None:
        return progress
    age = time.time() - newest_write(root)
    written = time.monotonic() - age
    if any(in_flight(root, w) for w in windows):
        written = time.monotonic()  # a batch opened its window and has not closed it
    return dataclasses.replace(progress, changed_at=max(progress.changed_at, written))


#: how deep under a job's directory its queries' checkpoints are looked for
CHECKPOINT_DEPTH = 2


def query_checkpoints(root: Path, depth: int = CHECKPOINT_DEPTH) -> list[Path]:
    """Every Structured Streaming checkpoint under ``root`` (a folder holding ``offsets/``
    and ``commits/``), at most ``depth`` folders down, sorted: one per query of the job (a
    dead-letter query may keep its own)."""
    found, todo = [], [(root, 0)]
    while todo:
        folder, level = todo.pop()
        try:
            entries = [e for e in os.scandir(folder) if e.is_dir(follow_symlinks=False)]
        except OSError:
            continue
        names = {e.name for e in entries}
        if {"offsets", "commits"} <= names:
            found.append(folder)
            continue
        if level < depth:
            todo += [
                (Path(e.path), level + 1) for e in entries if not e.name.startswith(("_", "."))
            ]
    return sorted(found)


def committed_end(root: Path, topic: str) -> dict[int, int] | None:
    """The end offsets of ``topic`` that every query of the job under ``root`` has committed
    (per partition, the least over its checkpoints of the newest ``commits/N``'s
    ``offsets/N``): Spark writes ``commits/N`` only after the batch's sink returned, so the
    job's output holds the effect of every record below them. None when nothing proves it:
    no checkpoint, a query that has committed nothing, or one whose offsets do not name
    ``topic`` (a query of another topic: its progress says nothing of this one)."""
    from sealcheck.systems.outputs.delta_log import checkpoint_batches, offsets

    checkpoints = query_checkpoints(root)
    if not checkpoints:
        return None
    ends: dict[int, int] | None = None
    for checkpoint in checkpoints:
        try:
            committed = checkpoint_batches(checkpoint, "commits")
            if not committed:
                return None
            end = offsets(checkpoint, committed[-1], topic)
        except (OSError, ValueError):  # being written or removed, or another topic's query
            return None
        ends = end if ends is None else {p: min(o, end.get(p, 0)) for p, o in ends.items()}
    return ends


def proven(progress: Progress | None, root: Path, topic: str) -> Progress | None:
    """``progress`` of an output without bindings with :attr:`Progress.proven` set from the
    job's checkpoints (:func:`committed_end`), read after the output was: any other progress
    as it is."""
    if progress is None or progress.settle_s is None:
        return progress
    return dataclasses.replace(progress, proven=committed_end(root, topic))
