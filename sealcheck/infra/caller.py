"""The process behind a call on the lazy disk, as ``/proc`` shows it: when it started (a
crash point armed ``fresh`` counts only processes started since: a restarted incarnation),
and whether it is already doomed (killed while the daemon held its call)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path


def ticks_now() -> int:
    """Now, in the clock ticks since boot that ``/proc/<pid>/stat`` gives start times in."""
    return int(time.clock_gettime(time.CLOCK_BOOTTIME) * os.sysconf("SC_CLK_TCK"))


def started(pid: int) -> int:
    """When process ``pid`` started, in clock ticks since boot (-1 when it is gone: it
    counts as old)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return -1
    return int(stat.rsplit(")", 1)[1].split()[19])  # field 22; the name may hold spaces


def doomed(pid: int) -> bool:
    """Whether process (or thread) ``pid`` is gone, a zombie, or has a SIGKILL pending: a
    process killed while the daemon holds its call cannot die until the call is answered
    (the kernel waits for a request the daemon has read), so it still runs then."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    if fields.get("State", "").split()[:1] in (["Z"], ["X"]):
        return True
    kill = 1 << (signal.SIGKILL - 1)
    return any(int(fields.get(f, "0").strip() or "0", 16) & kill for f in ("SigPnd", "ShdPnd"))
