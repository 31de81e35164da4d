"""Measuring helpers shared by the benches: waiting for a condition, the peak RSS of a
process tree, the times between sealed steps, percentiles.

Peak RSS (:class:`TreeRss`): every ``interval_s`` the proportional set size the kernel
reports (``Pss`` of ``/proc/<pid>/smaps_rollup``: resident pages, each shared page divided
among the processes sharing it; ``statm``'s resident pages where that file cannot be read) of
every descendant of this process, minus the subtrees named by ``exclude`` (the Kafka brokers),
summed; the peak is the largest sum seen. PSS, not RSS: a JVM that forks a helper (Hadoop's
``chmod`` under Delta) would otherwise be counted twice while the child shares its pages. A
peak that lasts less than ``interval_s`` can be missed.

CPU (:func:`cpu_snapshot`, :func:`cpu_between`): the busy time of the whole machine
(``/proc/stat``, summed over the cores) and the user + system time of this process, of each
process of its tree and of the brokers, with what each has reaped of its children
(``/proc/<pid>/stat``), taken at two moments; the difference says how much of the machine a
phase used and who used it (:func:`cpu_between` says how a process that exits is counted).

Step times (:class:`StepClock`): an upper (the lower of ``data`` and ``errors``) sampled every
``interval_s``; each time it moves, the time since it last moved is one step's time (split
evenly when one sample saw it move by more than one step). So a step's time is the wall time
between two consecutive sealed steps as seen from outside, at ``interval_s`` resolution.
"""

from __future__ import annotations

import json
import math
import os
import resource
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PAGE = os.sysconf("SC_PAGE_SIZE")
TICK = os.sysconf("SC_CLK_TCK")
MIB = 1024 * 1024


def wait(cond: Callable[[], bool], timeout_s: float, what: str, every_s: float = 0.1) -> float:
    """Seconds until ``cond()`` holds (sampled every ``every_s``); raises after ``timeout_s``."""
    start = time.monotonic()
    while not cond():
        if time.monotonic() - start > timeout_s:
            raise TimeoutError(f"{what} not within {timeout_s:.0f}s")
        time.sleep(every_s)
    return time.monotonic() - start


def percentile(values: Iterable[float], q: float) -> float | None:
    """The ``q``-th percentile (0-100) by nearest rank; None for no values."""
    xs = sorted(values)
    if not xs:
        return None
    return xs[min(len(xs) - 1, max(0, math.ceil(q / 100 * len(xs)) - 1))]


@dataclass(frozen=True)
class Proc:
    """One process as ``/proc/<pid>/stat`` shows it now (times in seconds)."""

    ppid: int
    comm: str
    rss: int  # resident bytes
    own_s: float  # user + system time of its own threads
    reaped_s: float  # user + system time of the children it has waited for
    start: int  # clock ticks after boot: with the pid, names the process (pids are reused)


def _processes() -> dict[int, Proc]:
    """Every process readable now, by pid."""
    out: dict[int, Proc] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            statm = Path(f"/proc/{entry}/statm").read_text()
        except OSError:
            continue  # exited meanwhile
        head, _, tail = stat.rpartition(")")
        f = tail.split()  # f[0] is field 3 of man 5 proc: utime 14, stime 15, cutime 16, …
        own, reaped = (int(f[11]) + int(f[12])) / TICK, (int(f[13]) + int(f[14])) / TICK
        rss = int(statm.split()[1]) * PAGE
        out[int(entry)] = Proc(int(f[1]), head.partition("(")[2], rss, own, reaped, int(f[19]))
    return out


def _pss(pid: int, rss: int) -> int:
    """``pid``'s proportional set size in bytes (``rss`` when it cannot be read)."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return rss


def _subtree(procs: dict[int, Proc], roots: Iterable[int], skip: set[int]) -> list[int]:
    """The pids below ``roots`` (not the roots themselves), without the subtrees of ``skip``."""
    children: dict[int, list[int]] = {}
    for pid, proc in procs.items():
        children.setdefault(proc.ppid, []).append(pid)
    out: list[int] = []
    todo = [c for r in roots for c in children.get(r, []) if c not in skip]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(c for c in children.get(pid, []) if c not in skip)
    return out


def tree_rss(root: int, exclude: Iterable[int] = ()) -> dict[str, int]:
    """Resident bytes of ``root``'s descendants (not ``root`` itself, nor the subtrees of
    ``exclude``), summed per command name."""
    procs = _processes()
    out: dict[str, int] = {}
    for pid in _subtree(procs, [root], set(exclude)):
        proc = procs[pid]
        out[proc.comm] = out.get(proc.comm, 0) + _pss(pid, proc.rss)
    return out


#: a process of a snapshot: (pid, start) -> the process
Procs = dict[tuple[int, int], Proc]


@dataclass(frozen=True)
class CpuSnapshot:
    """The CPU used so far, at monotonic time ``at``: by the machine, by this process (the
    harness), by its descendants (``tree``) and by the brokers' processes (``brokers``)."""

    at: float
    machine_s: float
    harness: Proc
    tree: Procs
    brokers: Procs


def _machine_busy_s() -> float:
    """Every core's busy time since boot: ``/proc/stat``'s ``cpu`` line, user to softirq
    without idle and iowait (guest time is inside user time; steal, time the hypervisor gave
    to other machines, is not this machine's work)."""
    ticks = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:8]]
    return (sum(ticks) - ticks[3] - ticks[4]) / TICK


def cpu_snapshot(brokers: Iterable[int]) -> CpuSnapshot:
    """The CPU used so far by the machine, this process, its descendants (without the
    brokers' trees) and the ``brokers`` with their descendants."""
    procs, skip, me = _processes(), set(brokers), os.getpid()
    mine = [pid for pid in skip if pid in procs]

    def keyed(pids: Iterable[int]) -> Procs:
        return {(pid, procs[pid].start): procs[pid] for pid in pids}

    return CpuSnapshot(
        time.monotonic(),
        _machine_busy_s(),
        procs[me],
        keyed(_subtree(procs, [me], skip)),
        keyed([*mine, *_subtree(procs, mine, set())]),
    )


def used_cpu_s() -> float:
    """User + system seconds this process (every thread) has used so far."""
    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_utime + used.ru_stime


def _total(procs: Procs) -> float:
    return sum(p.own_s + p.reaped_s for p in procs.values())


def cpu_between(a: CpuSnapshot, b: CpuSnapshot, records: int) -> dict[str, Any]:
    """What ``a`` to ``b`` used: the machine's busy core-seconds and their share of its
    capacity, the split, and core-seconds per 100,000 ``records`` (the machine's, and the
    system's: its processes and the brokers, without the harness and ``other``).

    The split: per command name, the processes of the tree alive at ``b`` (what they used
    since ``a``, or since they started); ``exited``, what processes that ended in between
    used in it (exact when the process that waited for them is the harness or in the tree,
    negative when it is not); ``harness``, this process's own threads; ``brokers``; and
    ``other``, the machine's busy time none of these account for."""
    wall, busy, cores = b.at - a.at, b.machine_s - a.machine_s, os.cpu_count() or 1
    parts: dict[str, float] = {}
    for key, proc in b.tree.items():
        before = a.tree.get(key)
        parts[proc.comm] = parts.get(proc.comm, 0.0) + proc.own_s - (before.own_s if before else 0)
    tree = _total(b.tree) - _total(a.tree) + b.harness.reaped_s - a.harness.reaped_s
    parts["exited"] = tree - sum(parts.values())
    parts["brokers"] = _total(b.brokers) - _total(a.brokers)
    parts["harness"] = b.harness.own_s - a.harness.own_s
    parts["other"] = busy - tree - parts["brokers"] - parts["harness"]
    system = tree + parts["brokers"]
    return {
        "wall_s": round(wall, 2),
        "cores": cores,
        "busy_core_s": round(busy, 2),
        "utilisation": round(busy / (wall * cores), 3) if wall > 0 else None,
        "parts_core_s": {k: round(v, 2) for k, v in sorted(parts.items()) if round(v, 2)},
        "core_s_per_100k_records": round(busy * 100_000 / records, 3) if records else None,
        "system_core_s_per_100k_records": (
            round(system * 100_000 / records, 3) if records else None
        ),
    }


def vm_hwm() -> int:
    """This process's peak resident bytes (``VmHWM`` of ``/proc/self/status``; unlike
    ``getrusage``'s ``ru_maxrss``, not inherited from the parent across ``exec``)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


class TreeRss(threading.Thread):
    """Samples :func:`tree_rss` of this process every ``interval_s`` until :meth:`stop`;
    :attr:`peak` is the largest sum (bytes), :attr:`parts` its split per command name, and
    :attr:`each` the peak of each command name on its own."""

    def __init__(self, exclude: Callable[[], Iterable[int]], interval_s: float = 0.2) -> None:
        super().__init__(daemon=True)
        self.exclude, self.interval_s = exclude, interval_s
        self.peak, self.samples = 0, 0
        self.parts: dict[str, int] = {}
        #: per command name, the largest sum of its processes seen in any sample
        self.each: dict[str, int] = {}
        self._halt = threading.Event()

    def run(self) -> None:
        """Sample until stopped."""
        root = os.getpid()
        while not self._halt.is_set():
            parts = tree_rss(root, self.exclude())
            self.samples += 1
            for comm, rss in parts.items():
                self.each[comm] = max(self.each.get(comm, 0), rss)
            if sum(parts.values()) > self.peak:
                self.peak, self.parts = sum(parts.values()), parts
            self._halt.wait(self.interval_s)

    def stop(self) -> dict[str, Any]:
        """Stop sampling; the peak in MiB with its split per command name."""
        self._halt.set()
        self.join()
        return {
            "peak_rss_mib": round(self.peak / MIB, 1),
            "peak_rss_parts_mib": {k: round(v / MIB, 1) for k, v in sorted(self.parts.items())},
            "peak_rss_each_mib": {k: round(v / MIB, 1) for k, v in sorted(self.each.items())},
            "rss_samples": self.samples,
        }


class StepClock:
    """The times between consecutive moves of an upper (see the module's docstring)."""

    def __init__(self, upper: Callable[[], int], interval_s: float = 0.05) -> None:
        self.upper, self.interval_s = upper, interval_s
        self.start = time.monotonic()
        self.first: float | None = None  # when the first step was seen sealed
        self.step_s: list[float] = []
        self._last_t, self._last_u = self.start, 0

    def sample(self) -> int:
        """Read the upper now and account for any steps sealed since the last sample."""
        u, now = self.upper(), time.monotonic()
        if u > self._last_u:
            if self.first is None:
                self.first = now - self.start
            elif self._last_u > 0:
                k = u - self._last_u
                self.step_s.extend([(now - self._last_t) / k] * k)
            self._last_t, self._last_u = now, u
        return u

    def until(self, cond: Callable[[], bool], timeout_s: float, what: str) -> float:
        """Sample until ``cond()`` holds; seconds since this clock started."""
        wait(lambda: self.sample() >= 0 and cond(), timeout_s, what, self.interval_s)
        return time.monotonic() - self.start


def step_stats(step_s: list[float]) -> dict[str, Any]:
    """n, p50, p99 and max of step times (seconds)."""
    return {
        "steps_timed": len(step_s),
        "step_p50_s": percentile(step_s, 50),
        "step_p99_s": percentile(step_s, 99),
        "step_max_s": max(step_s, default=None),
    }


def log_events(text: str) -> list[dict[str, Any]]:
    """The JSON events of an incarnation's log (a torn last line skipped)."""
    out = []
    for line in text.splitlines():
        if line.startswith('{"'):
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
    return [e for e in out if isinstance(e, dict) and "event" in e]


def step_phases(events: list[dict[str, Any]]) -> dict[str, Any]:
    """Where our pipeline's steps spent their time, from its incarnation's ``sealed`` events
    (``phases_s``: bind, read, diff, append, apply): each phase's median and its share of the
    summed step time. Empty for events without them (the Delta job, an older pipeline)."""
    phases: dict[str, list[float]] = {}
    for event in events:
        for name, took in (event.get("phases_s") or {}).items():
            phases.setdefault(name, []).append(float(took))
    total = sum(sum(v) for v in phases.values())
    return {
        name: {"p50_s": percentile(v, 50), "share": round(sum(v) / total, 3) if total else None}
        for name, v in phases.items()
    }
