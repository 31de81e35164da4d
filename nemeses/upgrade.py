"""``upgrade``: stop version N of the system under test and start version N+1 on the same
state, topic and output (issue 53).

A system that declares its versions (``SystemUnderTest.versions``, e.g. a
:class:`sealcheck.Job` with ``versions = ("v1", "v2")``) runs the first until this nemesis
switches to the next: the running incarnation is stopped and the supervisor starts the next
incarnation as version N+1 (its command and environment, ``JobRun.version``). How it is
stopped is a seeded choice: gracefully (SIGTERM, as a deployment does; SIGKILL after 30 s),
killed (SIGKILL, as a crash during a deployment does), or — for a system that declares crash
windows (:class:`sealcheck.core.windows.CrashWindow`, e.g. between its sink's commit and its
checkpoint's) — killed inside one of them, at the worst moment for the handover, the way the
``window`` nemesis kills (:func:`sealcheck.nemeses.window.arm`). A window that does not open in
time is "not reached": nobody is killed and version N runs on. Upgrades go one way, one per
window given to this nemesis, until the last version runs; windows after that hold nothing.
The heal undoes nothing: the run ends on the version it reached, and its last state is judged
as that version's: by the descriptor's ``effect`` in every column all versions write, and —
when ``effect`` takes a version and a later one adds a column — that column by the
``versions`` checker, against the version that wrote each row (:mod:`sealcheck.checkers.versions`).

Whether it bit: the incarnation it stopped exited, and another incarnation runs after it
(its version recorded before it started: ``harness info version``).
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping
from typing import Any

from sealcheck.core.roles import SUT
from sealcheck.nemeses.api import (
    Action,
    Mark,
    Nemesis,
    PlanInfo,
    Target,
    Terminable,
    chance_s,
    settled,
)
from sealcheck.nemeses.evidence import effect
from sealcheck.nemeses.window import FromBelow, Watch, arm, settle

#: how long a stopped version may take to exit after its SIGTERM before it is killed
GRACE_S = 30.0
#: how long the next incarnation may take to start after the stopped one exited
NEXT_WAIT_S = 15.0
SIGNALS = ("SIGTERM", "SIGKILL")
#: the third way to stop a version, for a system with crash windows: killed inside one
WINDOW = "window"


class Upgrade(Nemesis):
    """Stop the running version and start the next one on the same state."""

    name = "upgrade"
    requires = frozenset({"versions"})
    roles = frozenset({SUT.name})

    def __init__(self, info: PlanInfo) -> None:
        self.versions = tuple(info.versions)
        self.windows = tuple(sorted(info.windows))
        #: upgrades planned so far (one planning pass, window by window in time order)
        self.planned = 0
        #: a crash window armed (pending until it opens): the watch, the running incarnation
        #: and version when it was armed, and ``target.sealed()`` then
        self._armed: tuple[Watch | FromBelow, Any, str, int] | None = None

    @property
    def marks(self) -> Mapping[str, Mark]:
        """An instant, labelled with the version it starts."""
        return {"upgrade": Mark("instant", "upgrade", group="upgrade", which=("to",))}

    def plan(self, rng: random.Random, start_s: float, window_s: float) -> list[Action]:
        """The next upgrade (version N to N+1, by SIGTERM, SIGKILL or, with crash windows, a
        kill inside one: which, and which of its next two openings) in the window's first
        half; nothing once the last version is reached."""
        pair = self.next_pair()
        if pair is None:
            return []
        old, new = pair
        self.planned += 1
        at = start_s + rng.uniform(0, window_s / 2)
        how = rng.choice(SIGNALS + ((WINDOW,) if self.windows else ()))
        value: dict[str, Any] = {"from": old, "to": new, "signal": how}
        if how == WINDOW:
            value |= {"window": rng.choice(self.windows), "skip": rng.randint(0, 1)}
            value |= {"chance_s": c} if (c := chance_s(window_s)) is not None else {}
        return [self._act(at, self.verb(old, new), **value)]

    def next_pair(self) -> tuple[str, str] | None:
        """The versions the next planned action goes from and to (None: no more): here each
        next version once, in order."""
        n = self.planned
        return (self.versions[n], self.versions[n + 1]) if n + 1 < len(self.versions) else None

    def verb(self, old: str, new: str) -> str:
        """The action's name for a change from ``old`` to ``new``."""
        return "upgrade"

    def invoke(self, action: Action, target: Target) -> dict[str, Any]:
        """Switch the next incarnation's version, stop the running one by the planned signal,
        and wait for the next to start; for a crash window, arm it (pending until it
        opens)."""
        versions = target.versions()
        value = dict(action.value)
        if versions is None:
            return settled(value, "stopped", "the system declares no versions")
        [node] = target.nodes(SUT.name)
        running = versions.current
        value["was_running"] = running
        if running != value["from"]:  # an earlier change planned before it was not made
            why = f"{running} runs, not {value['from']}: an earlier change was not made"
            return {**value, "outcome": "skipped", "why": why}
        how = str(value.get("signal"))
        if how == WINDOW:
            window = target.windows().get(str(value["window"]))
            if window is None:
                why = f"the system declares no window {value['window']!r}"
                return {**value, "outcome": "skipped", "why": why}
            versions.switch(str(value["to"]))  # the incarnation after the kill: version N+1
            sealed = target.sealed()
            watch, watching = arm(str(value["window"]), window, target, int(value["skip"]), 0.0)
            self._armed = (watch, node.ident, running, sealed)
            return {**value, "watching": watching, "outcome": "pending"}
        versions.switch(str(value["to"]))
        if how == "SIGTERM" and isinstance(node, Terminable):
            stopped = node.terminate(GRACE_S)
            value["stopped"], code = stopped if stopped is not None else (None, None)
            how += f", exit {code}" if code is not None else ""  # -9: it outlived its grace
        else:
            value["stopped"] = node.kill()
        done = settled(value, "stopped", "no incarnation was running (even after waiting)")
        if done["outcome"] != "happened":
            return done  # the next incarnation starts as the new version all the same
        return _next_runs(node, done, f"{done['stopped']} ({running}) stopped by {how}")

    def resolve(self, action: Action, target: Target, waited_s: float) -> dict[str, Any]:
        """An armed crash window: the kill inside it and the next version running; or, not
        reached, nobody killed and version N switched back (it runs on)."""
        armed, self._armed = self._armed, None
        if armed is None:
            return {"outcome": "skipped", "why": "nothing was watched"}
        watch, ident, running, sealed = armed
        value = {**action.value, "was_running": running}
        done = settle(watch, action, target, waited_s, sealed)
        [node] = target.nodes(SUT.name)
        versions = target.versions()
        if done["outcome"] != "happened":
            if node.ident in (None, ident) and versions is not None:
                versions.switch(running)  # nobody was killed: version N runs on
                return {**value, **done, "why": f"{done['why']}; {running} runs on"}
            return {**value, **done, "why": f"{done['why']}; it restarted as {value['to']}"}
        crashed = done.get("crashed")
        stopped = done.get("killed") or (crashed.get("pgid") if isinstance(crashed, dict) else None)
        inside = done.get("effect") or {}  # the window's own evidence: inside it, or not
        said = str(inside.get("evidence", ""))
        own = f"{stopped} "
        said = said[len(own) :] if said.startswith(own) else said
        # the incarnation armed on, or (it restarted meanwhile, as the new version) its successor
        was = running if stopped == ident else (versions.current if versions else "?")
        how = f"{stopped} ({was}) {said} ({value['window']})"
        out = _next_runs(node, {**value, **done, "stopped": stopped}, how, timed=False)
        if inside.get("effect") is not True:  # killed after the window closed: no effect there
            out["effect"] = effect(False, out["effect"]["evidence"])
        return out

    def heal(self, target: Target) -> list[str]:
        """Stop watching a crash window still armed: if it never opened, nobody was killed
        for the upgrade, so version N runs on (the switch is taken back); if it did, the
        upgrade stands, as every upgrade does."""
        if self._armed is None:
            return []
        watch, _ident, running, _sealed = self._armed
        self._armed = None
        watch.stop.set()
        watch.join(5)
        versions = target.versions()
        if watch.result is not None or versions is None:
            return ["stopped watching for a window to upgrade in (the upgrade was made)"]
        versions.switch(running)
        return [f"stopped watching for a window to upgrade in ({running} runs on)"]


def _next_runs(node: Any, done: dict[str, Any], stopped: str, timed: bool = True) -> dict[str, Any]:
    """``done`` once the incarnation after the stopped one started (or
    :data:`NEXT_WAIT_S` passed), with the evidence: which stopped how, which runs the new
    version (``timed``: how soon after; not for a kill in a window, settled later than it
    happened)."""
    exited = time.monotonic()
    while node.ident in (None, done["stopped"]) and time.monotonic() < exited + NEXT_WAIT_S:
        time.sleep(0.05)
    now, took = node.ident, time.monotonic() - exited
    started = now is not None and now != done["stopped"]
    after = f"{now} runs {done['to']}" + (f" {took:.1f}s later" if timed else "")
    after = after if started else "no next incarnation"
    return {
        **done,
        "running": now if started else None,
        "effect": effect(started, f"{stopped}; {after}"),
    }
