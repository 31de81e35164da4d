"""Exact crash points for a job under Sealcheck, in one call: ``sealcheck_failpoint.hit(name)``.

A job that wants Sealcheck to crash it at an exact place calls :func:`hit` there, e.g. in a
Spark driver's ``foreachBatch`` right after the sink committed::

    import sealcheck_failpoint

    def write_batch(df, batch_id):
        merge(df)
        sealcheck_failpoint.hit("after_merge")

and its descriptor lists the name (``failpoints = {"after_merge": "..."}``). Outside a
Sealcheck run (no ``SEALCHECK_FAILPOINTS_FILE`` in the environment) :func:`hit` does nothing
but look at one environment variable once, so the call can stay in production code.

The contract (the same for every system under test): the harness arms a point by writing
``name=action@pass`` (``action``: ``crash``, ``error`` or ``sleep(<ms>)``; ``@pass``: which
pass through the point fires, 1 by default; several entries separated by ``;``) into the file
the environment variable names. The job re-reads the file whenever it changes. When a point
fires it prints one JSON line ``{"event": "failpoint", "name": ..., "action": ..., "pass":
...}`` to standard output, removes the file (so the next incarnation starts disarmed) and then
crashes with SIGKILL (nothing is flushed; a Spark driver's JVM exits with its Python parent),
raises :class:`FailpointError`, or sleeps.

This module imports nothing but the standard library and nothing of Sealcheck, so it can ship
with a job wherever the job runs.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import threading
import time

__all__ = ["ENV_VAR", "FailpointError", "Failpoints", "hit"]

#: the environment variable naming the failpoint file
ENV_VAR = "SEALCHECK_FAILPOINTS_FILE"

_SPEC = re.compile(
    r"^(?P<name>[A-Za-z0-9_.:-]+)=(?P<action>crash|error|sleep\((?P<ms>\d+)\))(@(?P<pass>\d+))?$"
)


class FailpointError(RuntimeError):
    """Raised by a failpoint armed with ``error``."""


class Failpoints:
    """The points armed in one failpoint file (re-read when its modification time changes)."""

    def __init__(self, path: str | None = None) -> None:
        self.path = path if path is not None else os.environ.get(ENV_VAR) or None
        self._mtime: int | None = None
        self._armed: dict[str, tuple[str, int, int]] = {}  # name -> (action, ms, pass)
        self._passes: dict[str, int] = {}
        self._lock = threading.Lock()

    def _poll(self) -> None:
        if self.path is None:
            return
        try:
            mtime: int | None = os.stat(self.path).st_mtime_ns
        except FileNotFoundError:
            mtime = None
        if mtime == self._mtime:
            return
        self._mtime, self._armed, self._passes = mtime, {}, {}
        if mtime is None:
            return
        try:
            with open(self.path) as fh:
                text = fh.read()
        except OSError:
            return
        for entry in filter(None, (e.strip() for e in text.split(";"))):
            match = _SPEC.match(entry)
            if match is None:
                print(json.dumps({"event": "failpoint_ignored", "entry": entry}), flush=True)
                continue
            action = "sleep" if match["ms"] is not None else match["action"]
            self._armed[match["name"]] = (action, int(match["ms"] or 0), int(match["pass"] or 1))

    def hit(self, name: str) -> None:
        """Pass through failpoint ``name``: it fires if armed and this is its armed pass."""
        if self.path is None:
            return
        with self._lock:
            self._poll()
            armed = self._armed.get(name)
            if armed is None:
                return
            action, ms, want = armed
            self._passes[name] = passes = self._passes.get(name, 0) + 1
            if passes != want:
                return
            event = {"event": "failpoint", "name": name, "action": action, "pass": passes}
            print(json.dumps(event, sort_keys=True), flush=True)
            del self._armed[name]
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)
        if action == "crash":
            os.kill(os.getpid(), signal.SIGKILL)
        elif action == "error":
            raise FailpointError(f"failpoint {name} fired (pass {passes})")
        else:
            time.sleep(ms / 1000)


_DEFAULT: Failpoints | None = None


def hit(name: str) -> None:
    """Pass through failpoint ``name`` of this process (:class:`Failpoints` of the file
    ``SEALCHECK_FAILPOINTS_FILE`` names; nothing at all without it)."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = Failpoints()
    _DEFAULT.hit(name)
