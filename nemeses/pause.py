"""``pause``, ``pause-kafka``, ``pause-spark-worker``: freeze a node of one role (as the run
declares it: :attr:`sealcheck.nemeses.api.PlanInfo.roles`), thaw it a seeded while later.

A paused incarnation of the system under test stalls mid-step and then carries on as if
nothing happened (SIGSTOP / SIGCONT locally, the cgroup freezer in containers). A frozen broker
keeps its sockets open but answers nothing — a harder fault for clients than a dead one, whose
connections are refused.

Each freeze and thaw says whether it bit (``effect``): the process's state read from
``/proc/<pid>/stat`` (``T``: stopped) where the node is a local process, or its cgroup's
freezer state for a container's host pid, else the node's own ``frozen`` flag where it has one,
else "effect not observable".
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sealcheck.core.nodes import Node
from sealcheck.core.roles import SUT
from sealcheck.nemeses.api import Action, Mark, Nemesis, PlanInfo, Target, settled
from sealcheck.nemeses.evidence import effect
from sealcheck.nemeses.kill import node_of, which


def proc_state(pid: Any) -> str | None:
    """The kernel's state letter of process ``pid`` (``T``: stopped), None when unreadable
    (not a local pid, or gone)."""
    if not isinstance(pid, int) or isinstance(pid, bool):
        return None
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()
    return fields[0] if fields else None


def cgroup_frozen(pid: int) -> bool | None:
    """Whether the cgroup freezer holds process ``pid`` (a paused container: its tasks sleep
    in the freezer, state ``S`` or ``D``, not ``T``): cgroup v2's ``cgroup.events``
    ``frozen 1`` or v1's ``freezer.state`` ``FROZEN``; None when neither can be read."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        try:
            if controllers == "freezer":
                state = Path(f"/sys/fs/cgroup/freezer{path}/freezer.state").read_text()
                return state.strip() == "FROZEN"
            if controllers == "" and path != "/":
                events = Path(f"/sys/fs/cgroup{path}/cgroup.events").read_text().split()
                return "frozen" in events and events[events.index("frozen") + 1] == "1"
        except (OSError, IndexError):
            continue
    return None


def frozen_effect(node: Node, ident: Any, want: bool) -> dict[str, Any]:
    """Whether ``node`` (``ident``: what the freeze or thaw returned) is frozen as ``want``
    says, with the evidence."""
    state = proc_state(ident)
    if state is not None:  # T: stopped (or the cgroup freezer); Z or X: dead
        frozen = state in "Tt" or (state not in "ZX" and cgroup_frozen(ident) is True)
        bit = frozen if want else not frozen and state not in "ZX"
        how = "stopped" if state in "Tt" else "in a frozen cgroup" if frozen else "running"
        return effect(bit, f"pid {ident} {how} (state {state}) after the {_verb(want)}")
    flag = getattr(node, "frozen", None)
    if isinstance(flag, bool):
        return effect(flag == want, f"{node.name} reports frozen={flag} after the {_verb(want)}")
    return effect(None, "effect not observable: no process state to read")


def _verb(freeze: bool) -> str:
    return "SIGSTOP" if freeze else "SIGCONT"


class Pause(Nemesis):
    """Freeze a node of role ``role`` early in the window, thaw it a seeded share of it later."""

    def __init__(self, name: str, role: str, info: PlanInfo) -> None:
        self.name, self.role = name, info.role(role)
        self.requires, self.roles = self.role.requires, frozenset({role})

    @property
    def marks(self) -> Mapping[str, Mark]:
        """An interval: frozen until thawed."""
        word = self.role.name
        label = f"{word} frozen"
        pause, resume = f"pause-{word}", f"resume-{word}"
        which = (self.role.index_key,) if self.role.index_key else ()
        return {
            pause: Mark("start", label, group="pause", which=which),
            resume: Mark("end", label, opens=pause, group="pause", which=which),
        }

    def plan(self, rng: random.Random, start_s: float, window_s: float) -> list[Action]:
        """One freeze and its thaw (the incarnation stays frozen longer: 20-60% of the window);
        nothing for a role the run lacks."""
        on, off = f"pause-{self.role.name}", f"resume-{self.role.name}"
        if self.role.count < 1:
            return []
        if self.role.name == SUT.name:
            return self._interval(rng, start_s, window_s, on, off, share=(0.2, 0.6))
        return self._interval(rng, start_s, window_s, on, off, **which(self.role, rng))

    def invoke(self, action: Action, target: Target) -> dict[str, Any]:
        """Freeze or thaw."""
        node, where = node_of(self.role, action, target)
        word = self.role.name
        if action.f.startswith("pause-"):
            done = settled({**where, "paused": node.pause()}, "paused", f"no {word} was running")
            key, want = "paused", True
        else:
            done = settled(
                {**where, "resumed": node.resume()},
                "resumed",
                f"the {word} was not frozen any more (killed and replaced, or never frozen)",
            )
            key, want = "resumed", False
        if done["outcome"] == "happened":
            done["effect"] = frozen_effect(node, done[key], want)
        return done

    def heal(self, target: Target) -> list[str]:
        """Thaw every frozen node of the role."""
        return [
            f"resumed {n.name} ({i})"
            for n in target.nodes(self.role.name)
            if (i := n.resume()) is not None
        ]
