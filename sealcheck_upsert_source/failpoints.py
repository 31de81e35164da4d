"""Failpoints: named places in the step loop and the persist layer where a fault can be forced.

Armed by the environment variable ``SEALCHECK_FAILPOINTS``, a ``;``-separated list of
``name=action@hit``::

    SEALCHECK_FAILPOINTS="data.mid_append=crash@3;compact.mid=sleep(500)@1"

``action`` is ``crash`` (SIGKILL this process: no cleanup, no flush), ``error`` (raise
:class:`FailpointError`) or ``sleep(ms)``; ``hit`` (default 1) is the 1-based count of passes
through the point at which it fires (once). Unset, :func:`failpoint` is a dict lookup on an
empty dict. :data:`FAILPOINTS` lists every point the pipeline defines; the nemeses use it.

A running pipeline can also be armed from outside: ``SEALCHECK_FAILPOINTS_FILE`` names a file
holding a spec in the same syntax, re-read whenever it changes (one ``stat`` per pass). A
crash armed from the file removes the file first, so the next incarnation starts clean; this
is how the ``failpoint`` nemesis aims a crash at one exact persist step without a restart.
Whatever fires from the file consumes it (the ``indeterminate`` nemesis's ``error`` too).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import sys
import time
from dataclasses import dataclass

from sealcheck_failpoint import ENV_VAR as _FILE_ENV

ENV_VAR = "SEALCHECK_FAILPOINTS"
#: the variable naming the failpoint file (spelled once, in :mod:`sealcheck_failpoint`)
FILE_ENV_VAR: str = _FILE_ENV

#: Every failpoint, with where it sits. Keep in step with docs/systems.md.
FAILPOINTS: dict[str, str] = {
    "bindings.before_append": "step loop: new offsets chosen, bindings not yet appended",
    "bindings.mid_append": "persist: inside the bindings transaction, part of the rows written",
    "bindings.after_append": "step loop: bindings for t sealed, data for t not yet read",
    "data.before_append": "step loop: range read and upserted, data not yet appended",
    "data.mid_append": "persist: inside the data+errors transaction, part of the rows written",
    "data.after_commit": "step loop: data for t committed, in-memory state not yet advanced",
    "rehydrate.mid": "start-up: data snapshot read, errors and bindings not yet",
    "compact.mid": "persist: inside the compaction transaction, old rows deleted, merged not yet",
    "compact.between": "step loop: bindings compacted (committed), data and errors not yet",
    "compact.after_commit": "step loop: compaction committed",
}

_SPEC = re.compile(
    r"^(?P<name>[a-z_.]+)=(?P<action>crash|error|sleep\((?P<ms>\d+)\))(@(?P<hit>\d+))?$"
)


class FailpointError(RuntimeError):
    """Raised by a failpoint armed with the ``error`` action."""


class FailpointSpecError(ValueError):
    """``SEALCHECK_FAILPOINTS`` could not be parsed; the message names the bad entry."""


@dataclass
class _Armed:
    action: str
    sleep_ms: int
    hit: int
    passes: int = 0


def parse(spec: str) -> dict[str, _Armed]:
    """Parse a ``SEALCHECK_FAILPOINTS`` value; unknown names and bad syntax are errors."""
    armed: dict[str, _Armed] = {}
    for raw in spec.split(";"):
        entry = raw.strip()
        if not entry:
            continue
        match = _SPEC.match(entry)
        if match is None:
            raise FailpointSpecError(
                f"{ENV_VAR} entry {entry!r} is not name=action[@hit]; "
                "actions are crash, error, sleep(ms), e.g. data.mid_append=crash@3"
            )
        name = match["name"]
        if name not in FAILPOINTS:
            raise FailpointSpecError(
                f"{ENV_VAR} names unknown failpoint {name!r}; known: {', '.join(FAILPOINTS)}"
            )
        hit = int(match["hit"] or 1)
        if hit < 1:
            raise FailpointSpecError(f"{ENV_VAR} entry {entry!r}: hit count must be at least 1")
        action = "sleep" if match["ms"] is not None else match["action"]
        armed[name] = _Armed(action, int(match["ms"] or 0), hit)
    return armed


_ARMED: dict[str, _Armed] = {}
_LOADED = False
_FILE: str | None = None
_FILE_MTIME: int | None = None
_FROM_FILE: set[str] = set()


def load_from_env() -> None:
    """Arm from ``SEALCHECK_FAILPOINTS``; raises :class:`FailpointSpecError` on a bad value.

    Entry points call this first so a typo is a clear start-up error; :func:`failpoint`
    loads lazily otherwise.
    """
    global _LOADED, _FILE
    arm(os.environ.get(ENV_VAR, ""))
    _FILE = os.environ.get(FILE_ENV_VAR) or None
    _LOADED = True
    _poll_file()


def _poll_file() -> None:
    """Re-arm from the failpoint file when it changed (entries there add to the env's)."""
    global _FILE_MTIME
    if _FILE is None:
        return
    try:
        mtime = os.stat(_FILE).st_mtime_ns
    except FileNotFoundError:
        mtime = None
    if mtime == _FILE_MTIME:
        return
    _FILE_MTIME = mtime
    for name in _FROM_FILE:
        _ARMED.pop(name, None)
    _FROM_FILE.clear()
    if mtime is None:
        return
    try:
        with open(_FILE) as fh:
            parsed = parse(fh.read())
    except (OSError, FailpointSpecError) as exc:
        print(f"failpoint file {_FILE}: ignored: {exc}", flush=True)
        return
    _ARMED.update(parsed)
    _FROM_FILE.update(parsed)


def failpoint(name: str) -> None:
    """Pass through failpoint ``name``; fires if armed and this is the configured pass."""
    if not _LOADED:
        load_from_env()
    if _FILE is not None:
        _poll_file()
    if not _ARMED:
        return
    armed = _ARMED.get(name)
    if armed is None:
        return
    armed.passes += 1
    if armed.passes != armed.hit:
        return
    event = {"event": "failpoint", "name": name, "action": armed.action, "pass": armed.passes}
    print(json.dumps(event, sort_keys=True), flush=True)
    if name in _FROM_FILE and _FILE is not None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(_FILE)  # consumed: the next incarnation starts disarmed
    if armed.action == "crash":
        sys.stdout.flush()
        os.kill(os.getpid(), signal.SIGKILL)
    elif armed.action == "error":
        raise FailpointError(f"failpoint {name} fired (pass {armed.passes})")
    else:
        time.sleep(armed.sleep_ms / 1000)


def arm(spec: str) -> None:
    """Replace the armed set (tests and in-process use; processes use the env variable)."""
    global _LOADED, _FILE, _FILE_MTIME
    _FILE, _FILE_MTIME = None, None
    _FROM_FILE.clear()
    parsed = parse(spec)
    _ARMED.clear()
    _ARMED.update(parsed)
    _LOADED = True
