"""The history of a run: JSON lines written by the harness as the run happens and read by
the checkers, the report and the tests — its one reader, and the names of its ops (the format
is in ``docs/formats.md``; its one writer is
:class:`sealcheck.rundir.history_writer.HistoryWriter`).

Acknowledged writes (``ok``) go to ``acks.arrows`` beside the history instead, column-wise
(:mod:`sealcheck.rundir.acks`); :meth:`History.load` reads them from there and, for runs stored
before that file existed, from ``ok`` write lines.

Reading: :meth:`History.load`. One behaviour on a bad line: a line that is not a JSON op, or
whose ``index`` is not its line number minus one (a line cut out, repeated or overwritten), is
a :class:`HistoryError` naming the file and the line. Only a torn *last* line — the line being
written when the harness died — is tolerated; :attr:`History.torn_tail` reports it. Anything
after the final op (lines, or a torn line) was written after the run ended: it is not read, and
:attr:`History.after_final` counts its bytes, a problem that makes the verdict UNKNOWN.
Every line must also fit the schema polars reads writes with (:mod:`sealcheck.rundir.schema`:
a ``partition`` or ``offset`` in any op's ``value`` is an integer): a line that does not is a
:class:`HistoryError` naming it, raised when the writes are first read.

A run's history starts with its id (``harness info run {"id": …}``, index 0:
:meth:`History.run_id`, :mod:`sealcheck.rundir.runid`). A history is *complete* when it reaches
the harness's final operation (:data:`FINAL_OP`, the
manifest of the inputs written after the dumps); :meth:`History.problems` says what is missing
otherwise, and no verdict is valid while it says anything.

The ops about the system under test (its incarnations' starts and exits, its events) and the
older names a stored run may use are in :mod:`sealcheck.rundir.names`; a loaded history gives
every op its current name.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa

from sealcheck.rundir import acks as ack_file
from sealcheck.rundir.files import why_unreadable
from sealcheck.rundir.lines import (
    BadLine,
    complete_prefix,
    count_lines,
    offset_after_line,
    read_ops,
)
from sealcheck.rundir.names import LAST_EXIT, LAST_START, SUT_EXIT, SUT_START, current
from sealcheck.rundir.regular import RESTORE, not_regular
from sealcheck.rundir.runid import RUN_OP
from sealcheck.rundir.schema import (
    BYTES_SCHEMA,
    WRITE_SCHEMA,
    acked_writes,
    encode_bytes,
    first_unreadable,
    read_acked,
)

__all__ = [
    "BYTES_SCHEMA",
    "EXPORT_FAILED",
    "FINAL_OP",
    "HALTED",
    "NEVER_STARTED",
    "WRITE_SCHEMA",
    "History",
    "HistoryError",
    "encode_bytes",
]

#: The op the harness writes last, after the topic dump and the store export: ``harness info
#: inputs`` with the files the checkers read and how many writes were acknowledged.
FINAL_OP = "inputs"
#: harness ops that say the run cannot be judged, with their ``reason``: no incarnation of the
#: system under test could be started; its store could not be exported
NEVER_STARTED, EXPORT_FAILED = "never-started", "export-failed"
#: the version an incarnation of a job that declares several runs (``harness info version``,
#: ``{"incarnation": n, "version": "v2"}``), recorded before it starts
VERSION = "version"
#: the harness op that says the run was halted early (``{"reason": …}``,
#: :mod:`sealcheck.harness.run.halt`): what was seen before is judged, but the verdict is never
#: valid
HALTED = "halted"


class HistoryError(ValueError):
    """The history cannot be read as written; the message names the file and the line."""


@dataclass
class History:
    """Acknowledged writes as a frame of bytes, everything else as a list of ops.

    ``acked`` (``time, partition, offset, key, value``) may be lazy: a loaded history is parsed
    by polars when a checker first needs the writes, hashed as it streams by. ``lines`` counts
    the complete lines read (None for a history built in memory); ``torn_tail`` the bytes of a
    torn last line that was skipped; ``unusable`` says why there is no usable history. Every
    op has its current name (:func:`sealcheck.rundir.names.current`).
    """

    acked: pl.DataFrame | pl.LazyFrame
    ops: list[dict[str, Any]] = field(default_factory=list)
    path: Path | None = None
    lines: int | None = None
    torn_tail: int = 0
    unusable: str | None = None
    #: bytes after the final op (lines or a torn line): the file changed after the run ended
    after_final: int = 0
    #: bytes of ``acks.arrows`` after its last complete record batch, not read
    acks_torn: int = 0
    #: ``acks.arrows`` was read into :attr:`acked` (:meth:`with_ack_file`: once)
    ack_file_read: bool = field(default=False, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for op in self.ops:  # a run stored under the old names reads as a new one
            if isinstance(op, dict) and op.get("f") != (f := current(op.get("f"))):
                op["f"] = f

    @staticmethod
    def empty(unusable: str | None = None) -> History:
        """A history with no ops (``unusable``: why, e.g. the file does not exist)."""
        return History(pl.DataFrame(schema=BYTES_SCHEMA), unusable=unusable)

    @staticmethod
    def load(path: Path, *, acks: bool = True) -> History:
        """Read ``history.jsonl`` and, with ``acks``, the acknowledged writes of ``acks.arrows``
        beside it (:meth:`with_ack_file`; without, a caller reads them later, e.g. in a thread
        while it reads other files). A :class:`HistoryError` names the first bad line; a torn
        last line (a crashed harness) is skipped and reported in :attr:`torn_tail`; whatever
        follows the final op is skipped and counted in :attr:`after_final`.

        Writes (most of a history) are parsed by polars straight from the file, lazily; the
        other ops are parsed with ``json`` now, to keep their full values. Every line's
        ``index`` is checked against its line number in the same pass.
        """
        refused = not_regular(path, path.parent)  # a FIFO is not opened: reading it never ends
        if refused is not None:
            return History.empty(unusable=refused)
        if not path.exists():
            return History.empty(unusable=f"{path} does not exist")
        size = path.stat().st_size
        complete = complete_prefix(path)
        if complete == 0:
            why = f"{path} is empty" if size == 0 else _no_line(path, size)
            return History(pl.DataFrame(schema=BYTES_SCHEMA), [], path, 0, size, unusable=why)
        source: Path | io.BytesIO = path
        if complete < size:  # torn last line: read only the complete prefix
            with open(path, "rb") as fh:
                source = io.BytesIO(fh.read(complete))
        total = count_lines(path, complete)
        # final_at: the line of the final op; what follows it is not the run's
        ops, final_at, bad = read_ops(source, _is_final)
        if bad is not None:
            raise _not_an_op(path, bad)
        if final_at is not None and (final_at < total or complete < size):
            history = _up_to_final(
                path, [op for op in ops if int(op["index"]) < final_at], final_at
            )
        elif isinstance(source, io.BytesIO):
            history = History(
                _read_acked(path, source.getvalue()), ops, path, total, size - complete
            )
        else:
            lazy = acked_writes(pl.scan_ndjson(path, schema=WRITE_SCHEMA))
            history = History(lazy, ops, path, total, size - complete)
        return history.with_ack_file() if acks else history

    def with_ack_file(self) -> History:
        """This history with the acknowledged writes of ``acks.arrows`` beside it after those
        of its own lines, when that file exists (a history read from no file, or unusable,
        reads none): a file that is not such a stream is a :class:`HistoryError` naming it.
        Returns ``self``, changed."""
        path = self.path.parent / ack_file.ACKS if self.path is not None else None
        if path is None or self.unusable is not None or self.ack_file_read:
            return self
        refused = not_regular(path, path.parent)  # a FIFO is not opened: reading it never ends
        if refused is not None:
            raise HistoryError(refused)
        if not path.exists():
            return self
        try:
            table, torn = ack_file.read(path)
        except (OSError, pa.ArrowException) as exc:  # ArrowInvalid is a ValueError too
            raise HistoryError(
                f"{path}: not a stream of acknowledged writes ({why_unreadable(exc)}): restore "
                "it from the run, or re-run the test"
            ) from None
        rows = pl.from_arrow(table)
        assert isinstance(rows, pl.DataFrame)  # a table gives a frame
        self.acked = pl.concat([self.acked.lazy(), rows.lazy()], how="vertical")
        self.acks_torn = torn
        self.ack_file_read = True  # only once read: a failed read leaves it to be tried again
        return self

    def collect(self, query: pl.LazyFrame) -> pl.DataFrame:
        """Collect a query over :attr:`acked`; a line polars cannot read against the schema
        (:data:`~sealcheck.rundir.schema.WRITE_SCHEMA`) becomes a :class:`HistoryError` naming
        that line and why."""
        try:
            return query.collect(engine="streaming")
        except pl.exceptions.PolarsError as exc:
            if self.path is None:
                raise
            raise _unreadable(self.path, self.path, exc) from None

    def run_id(self) -> str | None:
        """The run id the history's first op records (``harness info run {"id": …}``:
        :mod:`sealcheck.rundir.runid`); None when it records none (a run stored before run
        ids, a history built in memory, or no usable history)."""
        first = self.ops[0] if self.ops else None
        if first is None or first.get("index") != 0 or first.get("process") != "harness":
            return None
        value = first.get("value")
        found = value.get("id") if first.get("f") == RUN_OP and isinstance(value, dict) else None
        return found if isinstance(found, str) else None

    def final(self) -> dict[str, Any] | None:
        """The harness's final op (:data:`FINAL_OP`), if the history reaches it."""
        found: dict[str, Any]
        for found in reversed(self.ops):
            if _is_final(found):
                return found
        return None

    def caught_up(self) -> bool:
        """Whether the harness saw the system catch up after healing (its ``caught-up`` op:
        the log end sealed, or an output without bindings settled)."""
        return any(op.get("process") == "harness" and op.get("f") == "caught-up" for op in self.ops)

    def harness_failures(self) -> list[str]:
        """Why the harness could not drive the run (:data:`NEVER_STARTED`,
        :data:`EXPORT_FAILED` ops) or halted it early (:data:`HALTED`), each as a problem that
        makes the verdict UNKNOWN (a violation found is still INVALID)."""
        out = []
        for op in self.ops:
            value = op.get("value")
            if op.get("process") != "harness" or not isinstance(value, dict):
                continue
            if op.get("f") in (NEVER_STARTED, EXPORT_FAILED):
                out.append(f"{value.get('reason')}: the system's output cannot be judged")
            elif op.get("f") == HALTED:
                out.append(f"the run was halted: {value.get('reason')}")
        return out

    def problems(self) -> list[str]:
        """Why this history cannot be trusted to be complete (empty: it can)."""
        if self.unusable is not None:
            return [
                f"no usable history ({self.unusable}): acknowledged writes and observed "
                "uppers cannot be judged"
            ]
        failed = self.harness_failures()
        where = f"{self.path}" if self.path is not None else "the history"
        torn = []
        if self.acks_torn:
            acks = self.path.parent / ack_file.ACKS if self.path is not None else ack_file.ACKS
            torn.append(
                f"{acks}: {self.acks_torn:,} bytes after its last complete record batch were "
                "not read (the harness died writing it, or the file was changed): writes "
                "acknowledged there cannot be judged; re-run the test"
            )
        if self.after_final:
            changed = (
                f"{where}: {self.after_final:,} bytes after the final op: the file changed "
                f"after the run ended; {RESTORE}"
            )
            failed = [changed, *failed]
        if self.final() is not None or failed:
            return [*failed, *torn]
        last = self.ops[-1] if self.ops else None
        said = (
            f"its last non-write op is #{last.get('index')} {last.get('process')} "
            f"{last.get('f')} at {int(last.get('time', 0)) / 1e9:.1f}s"
            if last
            else "it holds no op but writes"
        )
        return [
            f"{where} ends after {self.lines if self.lines is not None else '?'} lines without "
            f"the harness's final {FINAL_OP!r} op ({said}): the run did not finish or the file "
            "was cut, so writes acknowledged after its end and the final state cannot be "
            "judged",
            *torn,
        ]

    def written_acks(self) -> int | None:
        """How many writes the harness counted as acknowledged (from the final op)."""
        final = self.final()
        if final is None:
            return None
        writes = (final.get("value") or {}).get("writes") or {}
        ok = writes.get("ok")
        return int(ok) if isinstance(ok, int) else None

    def seal_times(self) -> tuple[list[int], list[int]]:
        """Observed ``data`` uppers over time: (times, uppers), in history order."""
        times, uppers = [], []
        for op in self.observations():
            times.append(int(op["time"]))
            uppers.append(int(op["value"].get("data", 0)))
        return times, uppers

    def observations(self) -> Iterator[dict[str, Any]]:
        """The observer's ``uppers`` ops, in history order."""
        for op in self.ops:
            if op.get("f") == "uppers" and isinstance(op.get("value"), dict):
                yield op

    def context_for_step(self, step: int | None) -> dict[str, Any]:
        """The last nemesis op and the system's last start and exit before ``step`` was first
        seen sealed."""
        times, uppers = self.seal_times()
        when: int | None = None
        if step is not None:
            for t, u in zip(times, uppers, strict=True):
                if u > step:
                    when = t
                    break
        out: dict[str, Any] = {}
        if when is not None:
            out["sealed_by_ns"] = when
        return {**out, **self.context_at(when)}

    def versions(self) -> dict[int, str]:
        """Incarnation -> the version it ran, from the ``version`` op written before each start
        of a system that declares versions (empty for any other)."""
        out: dict[int, str] = {}
        for op in self.ops:
            value = op.get("value")
            if op.get("f") == VERSION and isinstance(value, dict):
                n, version = value.get("incarnation"), value.get("version")
                if type(n) is int and isinstance(version, str):
                    out[n] = version
        return out

    def context_at(self, when: int | None) -> dict[str, Any]:
        """The last nemesis op and the system's last start and exit at or before ``when`` (ns
        on the history's clock; None: the end of the history): ``last_nemesis``,
        :data:`~sealcheck.rundir.names.LAST_START`, :data:`~sealcheck.rundir.names.LAST_EXIT`;
        a start's or exit's value names the incarnation's ``version`` when the job has
        versions (the version behind the states read after it)."""
        out: dict[str, Any] = {}
        versions = self.versions()  # each written before its incarnation starts
        limit = when if when is not None else 1 << 62
        for op in self.ops:
            if int(op.get("time", 0)) > limit:
                break
            value = op.get("value")
            if op.get("process") == "nemesis":
                out["last_nemesis"] = _brief(op)
            elif op.get("f") in (SUT_START, SUT_EXIT):
                brief = _brief(op)
                n = value.get("incarnation") if isinstance(value, dict) else None
                if isinstance(value, dict) and type(n) is int and n in versions:
                    brief["value"] = {**value, "version": versions[n]}
                out[LAST_START if op["f"] == SUT_START else LAST_EXIT] = brief
        return out


def _is_final(op: dict[str, Any]) -> bool:
    return op.get("process") == "harness" and op.get("f") == FINAL_OP


def _not_an_op(path: Path, bad: BadLine) -> HistoryError:
    """The :class:`HistoryError` of a line that is not an op where it stands: a file whose
    first line is not one is not a history at all."""
    if bad.why is None:
        return HistoryError(
            f"{path} line {bad.n}: expected op index {bad.n - 1}, found {bad.index!r}: a line "
            f"was cut out, repeated or overwritten here; {RESTORE}"
        )
    if bad.n == 1:
        return HistoryError(
            f"{path} is not a Sealcheck history: line 1 is not a JSON op ({bad.why}): {RESTORE}"
        )
    return HistoryError(f"{path} line {bad.n}: not a JSON op ({bad.why}): {RESTORE}")


def _no_line(path: Path, size: int) -> str:
    """Why a history of ``size`` bytes and no newline is unusable."""
    return (
        f"{path} is not a Sealcheck history: it holds no complete line ({size:,} bytes without "
        f"a newline); {RESTORE}"
    )


def _up_to_final(path: Path, ops: list[dict[str, Any]], final_at: int) -> History:
    """The history up to its final op (line ``final_at``), with :attr:`History.after_final`
    the bytes that follow it: lines (or a torn line) appended after the run ended."""
    keep = offset_after_line(path, final_at)
    with open(path, "rb") as fh:
        prefix = fh.read(keep)
        after = fh.seek(0, io.SEEK_END) - keep
    return History(_read_acked(path, prefix), ops, path, final_at, 0, after_final=after)


def _read_acked(path: Path, data: bytes) -> pl.DataFrame:
    """The acknowledged writes of ``data`` (the readable part of ``path``); a line that does
    not fit the schema is a :class:`HistoryError` naming it."""
    try:
        return read_acked(data)
    except pl.exceptions.PolarsError as exc:
        raise _unreadable(path, data, exc) from None


def _unreadable(path: Path, source: Path | bytes, exc: Exception) -> HistoryError:
    n, why = first_unreadable(source)
    return HistoryError(f"{path} line {n}: {why}; polars said: {str(exc)[:300]}")


def _brief(op: dict[str, Any]) -> dict[str, Any]:
    return {k: op.get(k) for k in ("index", "time", "type", "f", "value")}
