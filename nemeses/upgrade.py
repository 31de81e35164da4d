"""``upgrade``: stop version N of the system under test and start version N+1 on the same
state, topic and output (issue 53).

A system that declares its versions (``SystemUnderTest.versions``, e.g. a
:class:`sealcheck.Job` with ``versions = ("v1", "v2")``) runs the first until this nemesis
switches to the next: the running incarnation is stopped — gracefully (SIGTERM, as a
deployment does; SIGKILL after 30 s) or killed (SIGKILL, as a crash during a deployment does),
a seeded choice — and the supervisor starts the next incarnation as version N+1 (its command
and environment, ``JobRun.version``). Upgrades go one way, one per window given to this
nemesis, until the last version runs; windows after that hold nothing. The heal undoes
nothing: the run ends on the version it reached, and its last state is judged as that
version's, from the descriptor's one ``effect`` (versions share it: a column a later version
adds is left out of the compared shape with the output's ``exclude``).

Whether it bit: the incarnation it stopped exited, and another incarnation runs after it
(its version recorded before it started: ``harness info version``).
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping
from typing import Any

from sealcheck.core.roles import SUT
from sealcheck.nemeses.api import Action, Mark, Nemesis, PlanInfo, Target, Terminable, settled
from sealcheck.nemeses.evidence import effect

#: how long a stopped version may take to exit after its SIGTERM before it is killed
GRACE_S = 30.0
#: how long the next incarnation may take to start after the stopped one exited
NEXT_WAIT_S = 15.0
SIGNALS = ("SIGTERM", "SIGKILL")


class Upgrade(Nemesis):
    """Stop the running version and start the next one on the same state."""

    name = "upgrade"
    requires = frozenset({"versions"})
    roles = frozenset({SUT.name})

    def __init__(self, info: PlanInfo) -> None:
        self.versions = tuple(info.versions)
        #: upgrades planned so far (one planning pass, window by window in time order)
        self.planned = 0

    @property
    def marks(self) -> Mapping[str, Mark]:
        """An instant, labelled with the version it starts."""
        return {"upgrade": Mark("instant", "upgrade", group="upgrade", which=("to",))}

    def plan(self, rng: random.Random, start_s: float, window_s: float) -> list[Action]:
        """The next upgrade (version N to N+1, by SIGTERM or SIGKILL) in the window's first
        half; nothing once the last version is reached."""
        if self.planned + 1 >= len(self.versions):
            return []
        old, new = self.versions[self.planned], self.versions[self.planned + 1]
        self.planned += 1
        at = start_s + rng.uniform(0, window_s / 2)
        how = rng.choice(SIGNALS)
        return [self._act(at, "upgrade", **{"from": old, "to": new, "signal": how})]

    def invoke(self, action: Action, target: Target) -> dict[str, Any]:
        """Switch the next incarnation's version, stop the running one by the planned signal,
        and wait for the next to start."""
        versions = target.versions()
        value = dict(action.value)
        if versions is None:
            return settled(value, "stopped", "the system declares no versions")
        [node] = target.nodes(SUT.name)
        running = versions.current
        versions.switch(str(value["to"]))
        value["was_running"] = running
        how = str(value.get("signal"))
        if how == "SIGTERM" and isinstance(node, Terminable):
            stopped = node.terminate(GRACE_S)
            value["stopped"], code = stopped if stopped is not None else (None, None)
            how += f", exit {code}" if code is not None else ""  # -9: it outlived its grace
        else:
            value["stopped"] = node.kill()
        done = settled(value, "stopped", "no incarnation was running (even after waiting)")
        if done["outcome"] != "happened":
            return done  # the next incarnation starts as the new version all the same
        exited = time.monotonic()
        while node.ident in (None, done["stopped"]) and time.monotonic() < exited + NEXT_WAIT_S:
            time.sleep(0.05)
        now, took = node.ident, time.monotonic() - exited
        started = now is not None and now != done["stopped"]
        after = f"{now} runs {value['to']} {took:.1f}s later" if started else "no next incarnation"
        what = f"{done['stopped']} ({running}) stopped by {how}; {after}"
        return {**done, "running": now if started else None, "effect": effect(started, what)}
