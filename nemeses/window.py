"""``window``: kill the job inside one of its crash windows, told from outside.

A system that declares crash windows (:class:`sealcheck.core.windows.CrashWindow`: a new file
in a directory it writes, or a line of its log, opens one; another closes it) needs no
failpoint: each action picks a window from a seeded cover of them all, how many of its openings
to let pass (``skip``: which occurrence) and how long to wait after the chosen one
(``delay_ms``: 0 is "kill now"), all saved in the schedule and replayed as they are. A watcher
thread polls the window's directory (every 2 ms) or the incarnation's log (every 20 ms); at the
chosen opening it waits the delay and SIGKILLs the running incarnation, then looks whether the
window had closed by then. The action's ``effect`` is that evidence: inside (the closing file
or line was not there) or after it closed — so window coverage counts only kills that landed
inside.

When the job's directory is on a lazy disk (a ``crash-at-sync`` or ``lost-writes`` nemesis in
the run) and the kill is "now", a window opened by a file is reached from below instead
(:class:`FromBelow`): the filesystem kills the job inside the rename that puts the chosen
opening file in place — how a millisecond window (a Delta commit before ``commits/N``) is hit.

A window that does not open in time (armed 3 s and the system sealed ``skip`` + 2 steps since,
or 20 s: :func:`sealcheck.nemeses.api.wait_fired`'s rule) is "not reached": skipped, with the
reason, and nobody is killed (a kill outside the window would be a fault the plan did not
ask for, counted against a window it never reached).
"""

from __future__ import annotations

import os
import random
import re
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sealcheck.core.roles import SUT
from sealcheck.core.windows import CrashWindow
from sealcheck.nemeses.api import (
    Action,
    Mark,
    Nemesis,
    PlanInfo,
    Target,
    chance_s,
    running_group,
    wait_fired,
)
from sealcheck.nemeses.evidence import effect

FILE_POLL_S = 0.002
LOG_POLL_S = 0.02


def _names(folder: Path | None) -> set[str]:
    try:
        return set(os.listdir(folder)) if folder is not None else set()
    except OSError:  # not created yet
        return set()


class Watch(threading.Thread):
    """Waits for the ``skip + 1``-th opening of ``window``, waits ``delay_s``, kills the
    running incarnation and records the evidence (:attr:`result`)."""

    def __init__(
        self, name: str, window: CrashWindow, root: Path | None, target: Target, skip: int,
        delay_s: float,
    ) -> None:  # fmt: skip
        super().__init__(name=f"window-{name}", daemon=True)
        self.label, self.window, self.target = name, window, target
        self.skip, self.delay_s = skip, delay_s
        self.opens_in = root / window.opens_in if root and window.opens_in is not None else None
        self.closes_in = root / window.closes_in if root and window.closes_in is not None else None
        self.stop = threading.Event()
        #: set once the chosen opening was seen: the kill is under way (resolve waits for it)
        self.killing = threading.Event()
        self.result: dict[str, Any] | None = None
        self._seen = _names(self.opens_in)
        self._ident = self._incarnation()
        self._log_at = len(self._log())
        # the closing directory as it was before the opening appeared (taken before the scan
        # *before* the one that finds it): whatever is new since may have closed the window
        self._closes = [_names(self.closes_in)] * 2
        self._chunk_at = self._log_at

    def _log(self) -> str:
        nodes = self.target.nodes(SUT.name)
        return nodes[0].log_text() if nodes and hasattr(nodes[0], "log_text") else ""

    def _incarnation(self) -> Any:
        nodes = self.target.nodes(SUT.name)
        return getattr(nodes[0], "ident", None) if nodes else None

    @staticmethod
    def _gone(node: Any) -> bool:
        """Wait until the killed incarnation has ended (a dead process writes nothing more:
        what is there now was there before the kill); True once it has."""
        dead = getattr(node, "last_killed", None)
        if dead is None:  # a node that cannot say: a moment for the signal to land
            time.sleep(0.05)
            return True
        deadline = time.monotonic() + 10
        while dead.alive and time.monotonic() < deadline:
            time.sleep(0.005)
        return not dead.alive

    def _next_opening(self) -> tuple[str, str | None] | None:
        """A new opening (what opened it, its ``{n}``), or None for now."""
        pattern = re.compile(self.window.opens)
        if self.window.opens_in is None:
            ident = self._incarnation()
            if ident != self._ident:  # a new incarnation: its log starts over
                self._ident, self._log_at = ident, 0
            text = self._log()
            self._chunk_at = self._log_at
            new, self._log_at = text[self._log_at :], len(text)
            found = [m for line in new.splitlines() if (m := pattern.search(line))]
        else:
            self._closes = [self._closes[1], _names(self.closes_in)]
            names = _names(self.opens_in)
            fresh = sorted(names - self._seen, key=lambda s: (len(s), s))
            self._seen |= names
            found = [m for name in fresh if (m := pattern.fullmatch(name))]
        for m in found:
            if self.skip > 0:
                self.skip -= 1
                continue
            return m.group(0), (m.group(1) if m.re.groups else None)
        return None

    def run(self) -> None:
        """Poll until the chosen opening (then kill) or :attr:`stop`."""
        poll = LOG_POLL_S if self.window.opens_in is None else FILE_POLL_S
        while not self.stop.is_set():
            opened = self._next_opening()
            if opened is not None:
                self.killing.set()
                self._kill(*opened)
                return
            time.sleep(poll)

    def _kill(self, what: str, n: str | None) -> None:
        opened_at = time.monotonic()
        closing = self.window.closing(n)
        before = self._closes[0]
        if self.delay_s and self.stop.wait(self.delay_s):
            return  # given up meanwhile: resolve kills
        nodes = self.target.nodes(SUT.name)
        killed = nodes[0].kill() if nodes else None
        after_ms = round((time.monotonic() - opened_at) * 1000, 1)
        gone = self._gone(nodes[0] if nodes else None)
        closed = None
        if closing is not None and self.window.closes_in is not None:
            # the batch's own closing (``{n}``) counts whenever it was written; any other
            # only when it is new since before the opening
            own = "{n}" in str(self.window.closes)
            pool = _names(self.closes_in) - (set() if own else before)
            closed = next((f for f in sorted(pool) if closing.fullmatch(f)), None)
        elif closing is not None:  # the killed incarnation's own log, read once it is gone
            dead = getattr(nodes[0], "last_killed", None) if nodes else None
            log = dead.log_text() if dead is not None else self._log()
            m = closing.search(log[self._chunk_at :])
            closed = m.group(0) if m else None
        where = f"{self.window.opens_in}/{what}" if self.window.opens_in else f"log line {what!r}"
        if killed is None:
            bit = effect(False, f"{where} opened {self.label}, but no incarnation was running")
        elif not gone:
            bit = effect(False, f"{killed} was sent SIGKILL {after_ms} ms after {where} but did "
                         "not end within 10 s")  # fmt: skip
        elif closed is not None:
            shut = f"{self.window.closes_in}/{closed}" if self.window.closes_in else repr(closed)
            bit = effect(
                False,
                f"{killed} killed {after_ms} ms after {where}: {shut} was already there "
                "(after the window)",
            )
        else:
            bit = effect(
                True, f"{killed} killed {after_ms} ms after {where}, before the window closed"
            )
        self.result = {"killed": killed, "opened_by": what, "after_ms": after_ms, "effect": bit}


class FromBelow:
    """The same wait as :class:`Watch`, taken inside the filesystem when the job's directory
    is on a lazy disk: a crash point (:mod:`sealcheck.infra.crash_points`) on the
    ``skip + 1``-th rename that puts an opening file in place kills the job inside that call —
    exactly at the opening, however narrow the window (a Delta commit before ``commits/N``)."""

    def __init__(
        self, name: str, window: CrashWindow, root: Path, disk: Any, skip: int, only: int | None
    ) -> None:
        self.label, self.window, self.disk = name, window, disk
        self.closes_in = root / window.closes_in if window.closes_in is not None else None
        self.at = len(disk.counters().get("crashes", []))
        where = re.escape(str(window.opens_in).strip("/"))
        disk.arm_crash("rename", skip + 1, f"^/{where}/{window.opens}$", only=only)
        self.stop = threading.Event()
        self.result: dict[str, Any] | None = None

    def is_alive(self) -> bool:
        """Still waiting (else :attr:`result` holds the crash and its evidence)."""
        crashes = self.disk.counters().get("crashes", [])[self.at :]
        if not crashes:
            return True
        c = crashes[0]
        name = str(c["path"]).rsplit("/", 1)[-1]
        m = re.fullmatch(self.window.opens, name)
        closing = self.window.closing(m.group(1) if m and m.re.groups else None)
        # killed inside the very call that opened the window: only the batch's own closing
        # (``{n}``), written before that (a replay), can show the window was not open
        own = "{n}" in str(self.window.closes)
        pool = _names(self.closes_in) if own else set()
        closed = next((f for f in sorted(pool) if closing and closing.fullmatch(f)), None)
        what = f"process group {c['pgid']} killed inside the rename of {c['path']}"
        bit = (
            effect(False, f"{what}: {self.window.closes_in}/{closed} was already there")
            if closed is not None
            else effect(True, f"{what}, before the window closed")
        )
        self.result = {"crashed": c, "opened_by": name, "after_ms": 0.0, "effect": bit}
        return False

    def join(self, timeout: float | None = None) -> None:
        """Disarm (it may fire meanwhile: look once more)."""
        if self.result is None:
            self.disk.disarm_crash()
            self.is_alive()


class CrashInWindow(Nemesis):
    """Kill the job inside its crash windows, one per fault window, in a seeded cover."""

    name = "window"
    requires = frozenset({"crash-windows"})
    roles = frozenset({SUT.name})

    def __init__(self, info: PlanInfo) -> None:
        self.windows = tuple(sorted(info.windows))
        self._order: list[str] = []
        self._watch: Watch | FromBelow | None = None
        self._sealed_at_arm = 0

    @property
    def marks(self) -> Mapping[str, Mark]:
        """Arming is an instant (the kill it causes shows as a restart)."""
        return {
            "crash-in-window": Mark("instant", "crash in a window", group="kill", which=("window",))
        }

    def plan(self, rng: random.Random, start_s: float, window_s: float) -> list[Action]:
        """The next window of the seeded cover, which of its openings, how long after."""
        if not self.windows:  # nothing to aim at (a run without them is refused first)
            return []
        if not self._order:
            self._order = list(self.windows)
            rng.shuffle(self._order)
        name = self._order.pop(0)
        at = start_s + rng.uniform(0, window_s / 4)
        skip = rng.randint(0, 2)
        delay_ms = 0.0 if rng.random() < 0.5 else round(rng.uniform(1, 100), 1)
        more = {"chance_s": c} if (c := chance_s(window_s)) is not None else {}
        return [self._act(at, "crash-in-window", window=name, skip=skip, delay_ms=delay_ms, **more)]

    def invoke(self, action: Action, target: Target) -> dict[str, Any]:
        """Start watching for the window; pending until the kill."""
        name = str(action.value["window"])
        window = target.windows().get(name)
        if window is None:
            return {"outcome": "skipped", "why": f"the system declares no window {name!r}"}
        self._sealed_at_arm = target.sealed()
        delay_s = float(action.value.get("delay_ms", 0.0)) / 1000
        self._watch, watching = arm(name, window, target, int(action.value.get("skip", 0)), delay_s)
        return {"watching": watching, "outcome": "pending"}

    def resolve(self, action: Action, target: Target, waited_s: float) -> dict[str, Any]:
        """The kill and its evidence; nobody killed if the window did not open in time."""
        watch, self._watch = self._watch, None
        if watch is None:
            return {"outcome": "skipped", "why": "nothing was watched"}
        return settle(watch, action, target, waited_s, self._sealed_at_arm)

    def heal(self, target: Target) -> list[str]:
        """Stop a watcher still waiting."""
        if self._watch is None:
            return []
        self._watch.stop.set()
        self._watch.join(5)
        self._watch, done = None, ["stopped watching for a window"]
        return done


def arm(
    name: str, window: CrashWindow, target: Target, skip: int, delay_s: float
) -> tuple[Watch | FromBelow, str]:
    """Start waiting for the ``skip + 1``-th opening of ``window`` to kill the running
    incarnation ``delay_s`` after it — in the filesystem when the job's directory is on a lazy
    disk and the kill is "now" (:class:`FromBelow`), else by polling (:class:`Watch`) — and
    say what is watched. Every nemesis that kills inside a crash window arms it here."""
    disk, root = target.disks().get("store"), target.files()
    if disk is not None and root is not None and window.opens_in is not None and not delay_s:
        below = FromBelow(name, window, root, disk, skip, running_group(target))
        return below, f"renames into {window.opens_in} (in the filesystem)"
    watch = Watch(name, window, root, target, skip, delay_s)
    watch.start()
    return watch, window.opens_in or "the log"


def settle(
    watch: Watch | FromBelow, action: Action, target: Target, waited_s: float, sealed_at_arm: int
) -> dict[str, Any]:
    """Wait for a window :func:`arm` armed, by :func:`~sealcheck.nemeses.api.wait_fired`'s rule
    (``action.value``: its ``window``, ``skip`` and ``chance_s``): the kill and its evidence,
    ``happened``; or ``skipped``, not reached, when it did not open in time — never a kill
    outside the window counted as an attempt (issue 49): nobody is killed then."""
    start = time.monotonic() - waited_s
    skip = int(action.value.get("skip", 0))
    wait_fired(target, waited_s, sealed_at_arm, action.value.get("chance_s"), watch.is_alive,
               skip)  # fmt: skip
    if isinstance(watch, Watch) and watch.killing.is_set():
        watch.join(30)  # the kill is under way (it may wait for an incarnation to start)
    watch.stop.set()
    watch.join(5)
    if watch.result is not None:
        return {**watch.result, "outcome": "happened"}
    why = f"{action.value['window']} did not open in {time.monotonic() - start:.1f}s"
    return {"outcome": "skipped", "why": f"not reached: {why} (nobody was killed)"}
