"""The events of the system under test, read from each incarnation's log as it runs and
recorded in the history as ``sut sut-event`` ops (:mod:`sealcheck.rundir.names`).

Every system under test, in any language, logs an event as one JSON line ``{"event": name,
...}`` (:func:`parse_event`). :class:`EventTail` follows one incarnation's log from where it
stopped (by byte offset through :class:`~sealcheck.core.nodes.LogFrom` when the node offers it,
else by character offset into :meth:`~sealcheck.core.nodes.Node.log_text`), so each event is
recorded once and each line split once. :func:`event_value` nests the event's own fields under
``fields`` and keeps them only when they are plain JSON: a system may log anything, and the
history must stay readable whatever it logs.
"""

from __future__ import annotations

import contextlib
import json
import math
import threading
from typing import Any

from sealcheck.core.nodes import Node
from sealcheck.rundir.history_writer import HistoryWriter
from sealcheck.rundir.names import SUT_EVENT, SUT_EVENT_READER_FAILED, SUT_EVENTS, SUT_PROCESS

#: an event line longer than this is recorded by its name only (its fields are left out)
MAX_EVENT_CHARS = 8_000
#: fields nested deeper than this are not recorded (the event is, by its name)
MAX_DEPTH = 32


def parse_event(line: str) -> dict[str, Any] | None:
    """The event a log line holds (a JSON object whose ``event`` is a string: the contract
    every system under test follows, in any language), else None."""
    if not line.startswith('{"') or '"event"' not in line:
        return None
    try:
        event = json.loads(line)
    except (ValueError, RecursionError):
        return None  # the line being written when the process died, or not JSON we can read
    if not isinstance(event, dict) or not isinstance(event.get("event"), str):
        return None
    return event


def _plain(value: Any, depth: int = 0) -> bool:
    """Whether ``value`` is plain JSON: finite numbers, nesting at most :data:`MAX_DEPTH`."""
    if depth > MAX_DEPTH:
        return False
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_plain(v, depth + 1) for v in value.values())
    if isinstance(value, list):
        return all(_plain(v, depth + 1) for v in value)
    return value is None or isinstance(value, (str, int))


def event_value(event: dict[str, Any], incarnation: int, chars: int = 0) -> dict[str, Any]:
    """The ``value`` of the ``sut-event`` op for ``event`` (logged by ``incarnation`` on a line
    of ``chars`` characters): ``{incarnation, event, fields}``, or ``{incarnation, event,
    note}`` when its fields cannot be recorded as they are."""
    name = str(event["event"])
    fields = {k: v for k, v in event.items() if k != "event"}
    note = None
    if chars > MAX_EVENT_CHARS:
        note = f"fields left out: the line has {chars:,} characters (over {MAX_EVENT_CHARS:,})"
    elif not _plain(fields):
        note = f"fields left out: not plain JSON (NaN, infinity or nesting over {MAX_DEPTH})"
    else:
        try:  # the writer's json.dumps then cannot fail on them, nor write what polars rejects
            fields = json.loads(json.dumps(fields, allow_nan=False))
        except (ValueError, TypeError, RecursionError) as exc:
            note = f"fields left out: not plain JSON ({type(exc).__name__})"
    if note is not None:
        return {"incarnation": incarnation, "event": name, "note": note}
    return {"incarnation": incarnation, "event": name, "fields": fields}


class EventTail:
    """The events of one incarnation not yet recorded. :meth:`poll` reads what its log gained
    since the last call and records the complete lines' events of the kinds in
    :data:`SUT_EVENTS` as ``sut sut-event`` ops, each once; :meth:`read` does the same given
    the whole log as text. Safe to call from two threads (the poller and the exit watcher)."""

    def __init__(self, history: HistoryWriter, incarnation: int) -> None:
        self.history, self.incarnation = history, incarnation
        #: how much of the log was read: bytes (:meth:`poll` on a node with ``log_from``) or
        #: characters (:meth:`read`), always up to the end of a complete line
        self.offset = 0
        self._lock = threading.Lock()

    def poll(self, node: Node, final: bool = False) -> int:
        """Record the events ``node`` logged since the last call (with ``final``, the
        incarnation exited: its last line too, finished or not); how many were recorded."""
        log_from = getattr(node, "log_from", None)
        if not callable(log_from):
            return self.read(node.log_text(), final)
        with self._lock:
            new = log_from(self.offset)
            if not isinstance(new, bytes):
                return 0
            used = len(new) if final else new.rfind(b"\n") + 1
            self.offset += used
            return self._record(new[:used].decode("utf-8", "replace"))

    def read(self, log_text: str, final: bool = False) -> int:
        """Record the events of the lines of ``log_text`` (the whole log so far) not read before
        (not the last, unfinished line unless ``final``); how many were recorded."""
        with self._lock:
            new = log_text[self.offset :]
            used = len(new) if final else new.rfind("\n") + 1
            self.offset += used
            return self._record(new[:used])

    def _record(self, text: str) -> int:
        recorded = 0
        for line in text.split("\n"):
            event = parse_event(line.rstrip("\r"))
            if event is None or event["event"] not in SUT_EVENTS:
                continue
            value = event_value(event, self.incarnation, len(line))
            self.history.append(SUT_PROCESS, "info", SUT_EVENT, value)
            recorded += 1
        return recorded


class EventPoller:
    """Reads one incarnation's events every ``every_s`` seconds while it runs (a thread), so
    they reach the history as they happen; :meth:`finish` reads the rest once it exited. A
    reader that fails is recorded once (``supervisor info sut-event-reader-failed``) and the
    run goes on: the events then arrive at the incarnation's exit."""

    def __init__(self, tail: EventTail, node: Node, every_s: float) -> None:
        self.tail, self.node, self.every_s = tail, node, every_s
        self._done = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"events-{tail.incarnation}", daemon=True
        )
        #: why reading failed (None: it did not)
        self.failed: str | None = None

    def start(self) -> None:
        """Start polling."""
        self._thread.start()

    def finish(self, timeout_s: float = 5.0) -> int:
        """Stop polling and record every event not recorded yet (the incarnation exited);
        how many were."""
        self._done.set()
        if self._thread.is_alive():
            self._thread.join(timeout_s)
        try:
            return self.tail.poll(self.node, final=True)
        except Exception as exc:  # the exit is recorded all the same
            self._failed(exc, "at the incarnation's exit")
            return 0

    def _run(self) -> None:
        while not self._done.wait(self.every_s):
            try:
                self.tail.poll(self.node)
            except Exception as exc:  # a reader's failure must not end the run
                self._failed(exc, "while it ran: the rest are read at its exit")
                return

    def _failed(self, exc: Exception, when: str) -> None:
        """Say once in the history why events could not be read (unless it is closed)."""
        if self.failed is not None:
            return
        self.failed = f"{type(exc).__name__}: {exc}"[:500]
        value = {"incarnation": self.tail.incarnation, "when": when, "error": self.failed}
        with contextlib.suppress(Exception):  # the history is closed: the run is over
            self.tail.history.append("supervisor", "info", SUT_EVENT_READER_FAILED, value)
