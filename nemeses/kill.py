"""``kill``, ``kill-kafka``, ``kill-postgres``, ``kill-spark-worker``, ``kill-executor``: SIGKILL
a node of one role.

What a role is comes from the run (:attr:`sealcheck.nemeses.api.PlanInfo.roles`): how many nodes
it has, which key of an action's value says which one, and whether it heals itself. A node that
heals itself — the system under test's incarnation (``sut``: the supervisor restarts it), a Spark
executor (its worker launches a new one) — is killed at a seeded moment of the window's first
half, so every kill is a crash-and-recover cycle. Another — a broker, the database, a Spark
worker — is killed early in the window and started again a seeded while later; healing starts
whatever is still down. With one broker the system under test and producers must wait; with
three (replication 3, min ISR 2) they carry on.

Whether a kill bit: the incarnation's from the supervisor's exit op (the incarnation it killed
exited by SIGKILL: ``sealcheck.nemeses.evidence``); another node's from the node itself, which
must be down (or running a new process) after the kill. A restart bit when the node serves
again.
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping
from typing import Any

from sealcheck.core.nodes import Node
from sealcheck.core.roles import SUT, Role
from sealcheck.nemeses.api import Action, Mark, Nemesis, PlanInfo, Target, settled
from sealcheck.nemeses.evidence import effect


def start_node(node: Node, running: str, **where: Any) -> dict[str, Any]:
    """Start ``node`` and wait until it serves: ``started`` and ``ready_s``, or ``skipped``
    with ``running`` when it was already running."""
    began = time.monotonic()
    done: dict[str, Any] = {**where, "started": node.start()}
    if done["started"] is not None:
        done["ready_s"] = round(time.monotonic() - began, 2)
        done["effect"] = effect(node.alive, f"{node.name} serving after {done['ready_s']}s")
    return settled(done, "started", running)


#: how long a killed node (not the incarnation) may take to be seen down
DOWN_WAIT_S = 5.0


def down_effect(node: Node, killed: Any, wait_s: float = DOWN_WAIT_S) -> dict[str, Any]:
    """Whether ``node`` was down (or running another process than ``killed``) within
    ``wait_s`` after its SIGKILL, with the evidence."""
    began = time.monotonic()
    while True:
        now = getattr(node, "ident", killed)
        if not node.alive or now != killed:
            took = time.monotonic() - began
            what = "down" if not node.alive else f"running {now}, not {killed}"
            return effect(True, f"{node.name} {what} {took:.1f}s after the SIGKILL")
        if time.monotonic() - began >= wait_s:
            return effect(False, f"{node.name} still ran {killed} {wait_s:.0f}s after the SIGKILL")
        time.sleep(0.05)


def which(role: Role, rng: random.Random) -> dict[str, Any]:
    """A seeded node of ``role`` as an action's value (``{index_key: i}``; empty for a role of
    one node)."""
    return {role.index_key: rng.randrange(role.count)} if role.index_key else {}


def node_of(role: Role, action: Action, target: Target) -> tuple[Node, dict[str, Any]]:
    """The node of ``role`` ``action`` names, and the value keys that name it (for the op)."""
    key = role.index_key
    index = int(action.value.get(key, 0)) if key else 0
    where = {key: index} if key and key in action.value else {}
    return target.nodes(role.name)[index], where


class Kill(Nemesis):
    """SIGKILL a node of role ``role`` (a seeded one when the run has several)."""

    def __init__(self, name: str, role: str, info: PlanInfo) -> None:
        self.name, self.role = name, info.role(role)
        self.requires, self.roles = self.role.requires, frozenset({role})

    @property
    def marks(self) -> Mapping[str, Mark]:
        """A kill of a node that heals itself is an instant; of another an outage (an
        interval, until it is started again)."""
        word = self.role.word
        kill, start = f"kill-{word}", f"start-{word}"
        which = (self.role.index_key,) if self.role.index_key else ()
        if self.role.self_healing:
            label = "kill" if self.role.name == SUT.name else f"{word} killed"
            return {kill: Mark("instant", label, group="kill", which=which)}
        down = f"{word} down"
        return {
            kill: Mark("start", down, group="outage", which=which),
            start: Mark("end", down, opens=kill, group="outage", which=which),
        }

    def plan(self, rng: random.Random, start_s: float, window_s: float) -> list[Action]:
        """A node that heals itself: one kill in the window's first half. Others: a kill early
        in the window, its restart after 20-50% of it. Nothing for a role the run lacks."""
        word = self.role.word
        if self.role.count < 1:
            return []
        if self.role.self_healing:  # (draws in this order: schedules of old seeds hold)
            at = start_s + rng.uniform(0, window_s / 2)
            return [self._act(at, f"kill-{word}", **which(self.role, rng))]
        on, off = f"kill-{word}", f"start-{word}"
        return self._interval(rng, start_s, window_s, on, off, **which(self.role, rng))

    def invoke(self, action: Action, target: Target) -> dict[str, Any]:
        """Kill, or start again."""
        node, where = node_of(self.role, action, target)
        word = self.role.word
        if action.f.startswith("kill-"):
            sut = self.role.name == SUT.name
            nothing = f"no {word} was running" + (" (even after waiting for one)" if sut else "")
            done = settled({**where, "killed": node.kill()}, "killed", nothing)
            if done["outcome"] == "happened" and not sut:
                done["effect"] = down_effect(node, done["killed"])
            return done
        return start_node(node, f"the {word} was running", **where)

    def heal(self, target: Target) -> list[str]:
        """Start every node of the role that is down (one that heals itself comes back on its
        own: the supervisor restarts the incarnation, a worker its executor)."""
        if self.role.self_healing:
            return []
        return [f"started {n.name}" for n in target.nodes(self.role.name) if n.start() is not None]
