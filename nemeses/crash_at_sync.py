"""``crash-at-sync``: crash the system at a durability boundary, from below — inside its k-th
``fsync`` or ``rename`` of one kind of file on its lazy disk (capability ``lazy-disk``).

Each action arms a crash point in the lazy disk's filesystem
(:mod:`sealcheck.infra.crash_points`): the operation (``fsync``: a SQLite commit in WAL mode,
a log's flush; ``rename``: a checkpoint's ``offsets/N`` or ``commits/N``, a Delta commit; the
two taken in turn, in a seeded order) and ``k`` (1-3) are planned from the seed and saved in
the schedule. The filesystem does the k-th such call on
one kind of file (counted from the arming; ``offsets/17`` and ``offsets/18`` are one kind),
then SIGKILLs the caller's process group before the call returns: the writer is blocked there,
nothing races it, and a window between two commits that no failpoint marks is reached by a
run, not by luck. Un-fsynced data is *not* dropped (a process crash keeps the page cache; the
``lost-writes`` nemesis is the power cut). The action's ``effect`` is the filesystem's record
of the kill: which call, which file, which process group.

A point that does not fire in time (armed 3 s and the system sealed k + 2 steps since, or 20 s)
is disarmed and recorded as not reached, with the reason; nobody is killed instead.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from sealcheck.core.roles import SUT
from sealcheck.nemeses.api import (
    Action,
    Mark,
    Nemesis,
    PlanInfo,
    Target,
    chance_s,
    running_group,
    wait_crashed,
)
from sealcheck.nemeses.evidence import effect

#: the operations planned, and the most calls of one kind of file a crash waits for
OPS = ("fsync", "rename")
MAX_K = 3


class CrashAtSync(Nemesis):
    """Arm one crash point per fault window: an operation and which occurrence."""

    name = "crash-at-sync"
    requires = frozenset({"lazy-disk"})
    roles = frozenset({SUT.name})

    def __init__(self, info: PlanInfo) -> None:
        self._order: list[str] = []
        self._crashes_at_arm = 0
        self._sealed_at_arm = 0

    @property
    def marks(self) -> Mapping[str, Mark]:
        """Arming is an instant (the crash shows as a restart)."""
        return {
            "crash-at-sync": Mark("instant", "crash at a sync", group="kill", which=("window",))
        }

    def plan(self, rng: random.Random, start_s: float, window_s: float) -> list[Action]:
        """An operation (from a seeded cover of both) and ``k`` from the seed, armed early in
        the window."""
        if not self._order:
            self._order = list(OPS)
            rng.shuffle(self._order)
        at = start_s + rng.uniform(0, window_s / 4)
        op, k = self._order.pop(0), rng.randint(1, MAX_K)
        more = {"chance_s": c} if (c := chance_s(window_s)) is not None else {}
        return [self._act(at, "crash-at-sync", window=op, k=k, **more)]

    def invoke(self, action: Action, target: Target) -> dict[str, Any]:
        """Arm the crash point; pending until it fires."""
        disk = target.disks().get("store")
        if disk is None:
            return {"outcome": "skipped", "why": "the system's directory is not on a lazy disk"}
        self._sealed_at_arm = target.sealed()
        self._crashes_at_arm = len(disk.counters().get("crashes", []))
        disk.arm_crash(
            str(action.value["window"]), int(action.value["k"]), only=running_group(target)
        )
        return {"armed": f"{action.value['window']} #{action.value['k']}", "outcome": "pending"}

    def resolve(self, action: Action, target: Target, waited_s: float) -> dict[str, Any]:
        """The filesystem's record of the crash, or a plain kill when it did not fire."""
        disk = target.disks().get("store")
        if disk is None:
            return {"outcome": "skipped", "why": "no lazy disk"}

        # k calls of one kind take about k steps: wait for those and two more
        crashes, armed_s = wait_crashed(disk, self._crashes_at_arm, target, waited_s,
                                        self._sealed_at_arm, action.value.get("chance_s"),
                                        int(action.value["k"]))  # fmt: skip
        if crashes:
            c = crashes[0]
            why = f"process group {c['pgid']} killed inside its {c['op']} #{c['k']} of {c['path']}"
            return {"crashed": c, "outcome": "happened", "effect": effect(True, why)}
        why = f"not reached: no {action.value['window']} #{action.value['k']} in {armed_s:.1f}s"
        return {"outcome": "skipped", "why": f"{why} (nobody was killed)"}

    def heal(self, target: Target) -> list[str]:
        """Disarm a crash point still armed."""
        disk = target.disks().get("store")
        if disk is None:
            return []
        return ["crash point disarmed"] if disk.disarm_crash().get("disarmed") else []
