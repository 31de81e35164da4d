"""``kill``, ``kill-kafka``, ``kill-postgres``: SIGKILL a node of one role.

The pipeline (the system under test's running incarnation) is killed at a seeded moment of
the window's first half and restarted by the supervisor, so every kill is a crash-and-recover
cycle. A broker or the database is killed early in the window and started again a seeded while
later; healing starts whatever is still down. With one broker the pipeline and producers must
wait; with three (replication 3, min ISR 2) they carry on.

Whether a kill bit: the pipeline's from the supervisor's ``pipeline-exit`` op (the incarnation
it killed exited by SIGKILL: ``sealcheck.nemeses.effects``); another node's from the node itself,
which
must be down (or running a new process) after the kill. A restart bit when the node serves again.
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping
from typing import Any

from sealcheck.nemeses.api import Action, Mark, Nemesis, Node, PlanInfo, Target, settled
from sealcheck.nemeses.effects import effect

#: role -> (the noun in action names, the capability the role needs)
ROLES = {
    "pipeline": ("pipeline", None),
    "broker": ("broker", None),
    "database": ("postgres", "database"),
    "spark-worker": ("spark-worker", "spark-cluster"),
    "spark-executor": ("executor", "spark-cluster"),
}
#: roles whose node comes back by itself after a kill (the supervisor restarts the pipeline,
#: a worker launches a new executor): a kill of theirs is an instant, not an outage
SELF_HEALING = ("pipeline", "spark-executor")


def index_key(role: str) -> str | None:
    """The action value's key that says which node of a role with several (None: one)."""
    return {"broker": "broker", "spark-worker": "worker", "spark-executor": "worker"}.get(role)


def count(role: str, info: PlanInfo) -> int:
    """How many nodes of ``role`` the run has."""
    return {"broker": info.brokers}.get(role, info.spark_workers if "spark" in role else 1)


def start_node(node: Node, running: str, **where: Any) -> dict[str, Any]:
    """Start ``node`` and wait until it serves: ``started`` and ``ready_s``, or ``skipped``
    with ``running`` when it was already running."""
    began = time.monotonic()
    done: dict[str, Any] = {**where, "started": node.start()}
    if done["started"] is not None:
        done["ready_s"] = round(time.monotonic() - began, 2)
        done["effect"] = effect(node.alive, f"{node.name} serving after {done['ready_s']}s")
    return settled(done, "started", running)


#: how long a killed node (not the pipeline) may take to be seen down
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


class Kill(Nemesis):
    """SIGKILL a node of ``role`` (a seeded one when the role has several)."""

    def __init__(self, name: str, role: str, info: PlanInfo) -> None:
        self.name, self.role = name, role
        self.noun, need = ROLES[role]
        self.requires = frozenset({need} if need else ())
        self.count, self.key = count(role, info), index_key(role)

    @property
    def marks(self) -> Mapping[str, Mark]:
        """A pipeline or executor kill is an instant; a broker, database or worker outage an
        interval."""
        kill, start = f"kill-{self.noun}", f"start-{self.noun}"
        if self.role in SELF_HEALING:
            label = "kill" if self.role == "pipeline" else f"{self.noun} killed"
            return {kill: Mark("instant", label, group="kill")}
        down = f"{self.noun} down"
        return {
            kill: Mark("start", down, group="outage"),
            start: Mark("end", down, opens=kill, group="outage"),
        }

    def plan(self, rng: random.Random, start_s: float, window_s: float) -> list[Action]:
        """The pipeline: one kill in the window's first half. Others: a kill early in the
        window, its restart after 20-50% of it."""
        if self.role in SELF_HEALING:  # (draws in this order: schedules of old seeds hold)
            at = start_s + rng.uniform(0, window_s / 2)
            which: dict[str, Any] = {self.key: rng.randrange(self.count)} if self.key else {}
            return [self._act(at, f"kill-{self.noun}", **which)]
        on, off = f"kill-{self.noun}", f"start-{self.noun}"
        which = {self.key: rng.randrange(self.count)} if self.key else {}
        return self._interval(rng, start_s, window_s, on, off, **which)

    def invoke(self, action: Action, target: Target) -> dict[str, Any]:
        """Kill, or start again."""
        index = int(action.value.get(self.key, 0)) if self.key else 0
        node = target.nodes(self.role)[index]
        where = {self.key: index} if self.key and self.key in action.value else {}
        if action.f.startswith("kill-"):
            nothing = f"no {self.noun} was running" + (
                " (even after waiting for one)" if self.role == "pipeline" else ""
            )
            done = settled({**where, "killed": node.kill()}, "killed", nothing)
            if done["outcome"] == "happened" and self.role != "pipeline":
                done["effect"] = down_effect(node, done["killed"])
            return done
        return start_node(node, f"the {self.noun} was running", **where)

    def heal(self, target: Target) -> list[str]:
        """Start every node of the role that is down (the supervisor restarts the pipeline, a
        worker its executor)."""
        if self.role in SELF_HEALING:
            return []
        return [f"started {n.name}" for n in target.nodes(self.role) if n.start() is not None]
