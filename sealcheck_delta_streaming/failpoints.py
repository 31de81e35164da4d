"""The job's failpoints: places where the harness can crash, fail or stall one incarnation.

The harness arms a point by writing ``name=action@hit`` (action ``crash``, ``error`` or
``sleep(ms)``) into the file named by ``SEALCHECK_FAILPOINTS_FILE``; the job re-reads the file
whenever it changes. When a point fires the job prints a JSON ``failpoint`` event and removes
the file (consumed: the next incarnation starts disarmed); ``crash`` is SIGKILL of the driver
process, so nothing is flushed and Spark's JVM dies with it (it exits when its Python parent
does). This is the same contract as the pipeline's failpoints (``suts/api.py``), kept apart so
the job needs nothing of the pipeline.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import time

FILE_ENV_VAR = "SEALCHECK_FAILPOINTS_FILE"

#: Every failpoint of the job, with where it sits. Keep in step with docs/architecture.md.
FAILPOINTS: dict[str, str] = {
    "start.before_query": "start-up: Spark session up and tables created, the streaming query "
    "not yet started (it will resume from the checkpoint)",
    "batch.before_merge": "foreachBatch: winners of the micro-batch computed, no Delta commit yet",
    "batch.between_commits": "foreachBatch: the data table's MERGE committed, the errors "
    "table's not yet",
    "batch.after_commits": "foreachBatch: both Delta commits done, foreachBatch not returned "
    "(Spark's commits/N not yet written: the batch will be replayed)",
}

_SPEC = re.compile(
    r"^(?P<name>[a-z_.]+)=(?P<action>crash|error|sleep\((?P<ms>\d+)\))(@(?P<hit>\d+))?$"
)


class FailpointError(RuntimeError):
    """Raised by a failpoint armed with ``error``."""


class Failpoints:
    """The points armed from the failpoint file (re-read when its mtime changes)."""

    def __init__(self, path: str | None = None) -> None:
        self.path = path if path is not None else os.environ.get(FILE_ENV_VAR) or None
        self._mtime: int | None = None
        self._armed: dict[str, tuple[str, int, int]] = {}  # name -> (action, ms, hit)
        self._passes: dict[str, int] = {}

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
            if match is None or match["name"] not in FAILPOINTS:
                print(json.dumps({"event": "failpoint_ignored", "entry": entry}), flush=True)
                continue
            action = "sleep" if match["ms"] is not None else match["action"]
            self._armed[match["name"]] = (action, int(match["ms"] or 0), int(match["hit"] or 1))

    def hit(self, name: str) -> None:
        """Pass through failpoint ``name``: fires if armed and this is its configured pass."""
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
        if self.path is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)
        if action == "crash":
            os.kill(os.getpid(), signal.SIGKILL)
        elif action == "error":
            raise FailpointError(f"failpoint {name} fired (pass {passes})")
        else:
            time.sleep(ms / 1000)
