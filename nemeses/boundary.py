"""``boundary``: crash a job at one of its commit boundaries, on purpose, from below.

A job's crash windows that files open and close (``after-offsets``: ``offsets/N`` opens it,
``commits/N`` closes it) have edges, its commit boundaries
(:func:`sealcheck.core.windows.boundaries`): ``opened`` (just after the opening file is put in
place), ``closing`` (just before the closing file is: for a Structured Streaming job, the
batch's sink has committed and ``commits/N`` is not written — whatever the sink, a restart
replays the batch and the job's own exactly-once mechanism must skip what it applied) and
``closed`` (just after it: the job's first write outside the checkpoint after each closing
rename is made :data:`SLOW_MS` late, so a write the job did not await is still in flight —
a job that awaits its writes is only that much slower); and inside the sink, after the window
opened: ``committed`` (just after its first commit, an fsync of a file outside the
checkpoint: a batch half-applied, or applied and not recorded) and ``full`` (its first write
fails with ``ENOSPC``: the job must fail the batch, not go on without it); and on the
checkpoint, ``unwritable`` (the write of the closing file's temporary file fails with ``EIO``).
A system that names its store's files (``commit_files``) has ``restart:commit-k`` too: the
running incarnation is killed and its successor killed again just after its ``k``-th commit
to the store returned (the point counts only process groups started since it was armed). With the
job's directory on a lazy disk (capability ``lazy-disk``; power cuts stay the ``lost-writes``
nemesis's), each action arms a crash point (:mod:`sealcheck.infra.crash_points`) on the
boundary's call — its side, which occurrence (``skip``) from the seed — and the filesystem
SIGKILLs the job inside that call (a ``before`` rename is never done), or fails it. Nothing
races it: a boundary a millisecond wide is hit every time it occurs. The cover is seeded and
aims at every boundary but ``opened`` before any twice (:data:`sealcheck.core.windows.LATER`).

An armed boundary waits for its next occurrence (an incarnation still starting up has none),
by :func:`sealcheck.nemeses.api.wait_fired`'s rule; one that does not occur in time is
disarmed and recorded as not reached, with the reason — never replaced by a kill elsewhere.
The action's ``effect`` is the filesystem's record of the kill, taken inside the call: the
renamed file was new (not a replayed batch's file written again) and is in place (``after``)
or never put there (``before``).
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Mapping
from typing import Any

from sealcheck.core.roles import SUT
from sealcheck.core.windows import COMMIT_WRITE, LATER, Boundary, boundaries
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

#: how long the findings wait, after the fault phase, for the replay of a batch a crash left
#: (a restart of a Spark job takes 20-45 s on 2 cores)
REPLAY_WAIT_S = 90.0

#: how late the job's first sink write after each ``closing`` rename is made at a ``closed``
#: boundary: longer than a loaded machine takes from a batch's end to its commits/N, and
#: short beside a run (a correct job is that much slower in at most three batches)
SLOW_MS = 1000


class CrashAtBoundary(Nemesis):
    """Kill the job at one of its commit boundaries per fault window, in a seeded cover."""

    name = "boundary"
    requires = frozenset({"commit-boundaries", "lazy-disk"})
    roles = frozenset({SUT.name})

    def __init__(self, info: PlanInfo) -> None:
        self.boundaries = tuple(sorted(info.boundaries))
        self.commit_files = info.commit_files
        self._order: list[str] = []
        self._armed: Boundary | None = None  # what invoke armed, for resolve
        self._at = 0
        self._sealed_at_arm = 0
        #: the replays the lazy disk watches: the file that ends each -> its batch
        self._watching: dict[str, int] = {}
        #: the incarnation a restart boundary killed (never the one it crashes after)
        self._killed: int | str | None = None

    @property
    def marks(self) -> Mapping[str, Mark]:
        """Arming is an instant (the crash shows as a restart)."""
        return {
            "crash-at-boundary": Mark(
                "instant", "crash at a boundary", group="kill", which=("boundary",)
            )
        }

    def plan(self, rng: random.Random, start_s: float, window_s: float) -> list[Action]:
        """The next boundary of the seeded cover, and which of its occurrences."""
        if not self.boundaries:  # nothing to aim at (a run without them is refused first)
            return []
        if not self._order:  # a seeded cover: the boundaries where mistakes show first
            first = [b for b in self.boundaries if b.rsplit(":", 1)[-1] not in LATER]
            later = [b for b in self.boundaries if b.rsplit(":", 1)[-1] in LATER]
            rng.shuffle(first)
            rng.shuffle(later)
            self._order = first + later
        name = self._order.pop(0)
        at = start_s + rng.uniform(0, window_s / 4)
        more = {"chance_s": c} if (c := chance_s(window_s)) is not None else {}
        return [self._act(at, "crash-at-boundary", boundary=name, skip=rng.randint(0, 2), **more)]

    def invoke(self, action: Action, target: Target) -> dict[str, Any]:
        """Arm the crash point on the boundary's call (for a restart boundary, then kill the
        running incarnation); pending until it fires."""
        disk = target.disks().get("store")
        found = boundaries(target.windows(), self.commit_files).get(
            str(action.value.get("boundary"))
        )
        self._armed = None
        if disk is None:
            return {"outcome": "skipped", "why": "the job's directory is not on a lazy disk"}
        if found is None:
            why = f"the job has no boundary {action.value['boundary']!r}"
            return {"outcome": "skipped", "why": why}
        self._sealed_at_arm = target.sealed()
        self._at = len(disk.counters().get("crashes", []))
        skip = int(action.value.get("skip", 0))
        late = SLOW_MS if found.slow else 0
        before = running_group(target)
        disk.arm_crash(
            found.op, found.k or skip + 1, found.path, when=found.when, do=found.do,
            errno=found.errno or "EIO", slow=found.slow, slow_ms=late, gate=found.gate,
            min_write=found.min_write or COMMIT_WRITE, watch_until=found.replay_until,
            watch_count=found.sink, next_call=found.next_call, fresh=found.restart,
        )  # fmt: skip
        self._armed = found
        done: dict[str, Any] = {"armed": _aimed(found, skip), "outcome": "pending"}
        return self._restart(found, disk, target, before, done) if found.restart else done

    def _restart(
        self, found: Boundary, disk: Any, target: Target, before: int | None, done: dict[str, Any]
    ) -> dict[str, Any]:
        """Kill the running incarnation (``before``): the point, armed ``fresh``, counts its
        successor's commits alone. One that started between the arming and the kill is
        killed instead, and the point is armed again, counting from then."""
        self._killed = killed = target.nodes(SUT.name)[0].kill()
        if killed is None:
            disk.disarm_crash()
            self._armed = None
            return {"outcome": "skipped", "why": "no incarnation ran to restart"}
        if killed != before:
            disk.arm_crash(
                found.op, found.k, found.path, when=found.when, min_write=COMMIT_WRITE,
                next_call=True, fresh=True,
            )  # fmt: skip
        return {**done, "restarted": killed}

    def resolve(self, action: Action, target: Target, waited_s: float) -> dict[str, Any]:
        """The filesystem's record of the kill and the job's directory as it was left; "not
        reached" with the reason when the boundary did not occur in time."""
        disk, found, self._armed = target.disks().get("store"), self._armed, None
        if disk is None or found is None:
            return {"outcome": "skipped", "why": "nothing was armed"}
        skip = int(action.value.get("skip", 0))
        more = found.k if found.restart else skip  # a restart, then k commits
        crashes, armed_s = wait_crashed(disk, self._at, target, waited_s, self._sealed_at_arm,
                                        action.value.get("chance_s"), more)  # fmt: skip
        if not crashes:
            why = f"no {_aimed(found, skip)} in {armed_s:.1f}s"
            nobody = "nobody was killed" if found.do == "kill" else "no call failed"
            unfired = disk.counters().get("unfired") or {}
            if found.gate and unfired.get("opened_by"):  # the window opened; the sink was silent
                nobody += (
                    f"; after {unfired['opened_by']} the job made no {found.op} outside its "
                    "checkpoint: a sink that is not on the job's disk (a database server, a "
                    "topic) has no such boundary here"
                )
            return {"outcome": "skipped", "why": f"not reached: {why} ({nobody})"}
        crash = crashes[0]
        bit = _restarted(found, crash, self._killed) if found.restart else _evidence(found, crash)
        done: dict[str, Any] = {"crashed": crash, "outcome": "happened", "effect": bit}
        if found.restart:
            done["restarted"] = self._killed
        batch = re.search(r"/(\d+)$", str(crash.get("after") or crash.get("path") or ""))
        if crash.get("watching") and bit.get("effect") and batch:  # what the restart then did
            done["replays"] = n = int(batch.group(1))
            self._watching[str(crash["watching"])] = n  # the disk watches from the kill on
        return done

    def findings(self, target: Target) -> list[dict[str, Any]]:
        """What each restart did with the batch a crash here left to replay: the lazy disk's
        watch of the job's sink commits until that batch's ``commits/N`` (awaited up to
        :data:`REPLAY_WAIT_S`: the job replays before it can catch up anyway)."""
        disk = target.disks().get("store")
        if disk is None or not self._watching:
            return []
        deadline = time.monotonic() + REPLAY_WAIT_S
        while True:
            watches = list(disk.counters().get("watches") or [])
            if all(w.get("done") for w in watches) or time.monotonic() >= deadline:
                break
            time.sleep(0.2)
        out = []
        for w in watches:
            if (n := self._watching.get(str(w.get("until")))) is not None:
                done = bool(w.get("done"))
                out.append({"replayed": n, "sink_commits": w.get("commits"), "done": done})
        return out

    def heal(self, target: Target) -> list[str]:
        """Disarm a crash point still armed."""
        disk = target.disks().get("store")
        if disk is None:
            return []
        return ["boundary disarmed"] if disk.disarm_crash().get("disarmed") else []


def _aimed(found: Boundary, skip: int) -> str:
    """What the crash point is armed on, for people."""
    if found.restart:
        return f"{found.when} a restarted incarnation's commit #{found.k} to {found.path}"
    if found.gate:
        first = f"{found.when} the first {found.op} of {found.path}"
        return f"{first} after rename #{skip + 1} of {found.gate}"
    return f"{found.when} {found.op} #{skip + 1} of {found.path}"


def _evidence(found: Boundary, crash: Mapping[str, Any]) -> dict[str, Any]:
    """Whether the kill landed on the boundary, from the filesystem's record of that very
    call: the rename put a new file in place (``existed`` false: a first ``commits/N``, not
    a replayed batch's file written again), or the sink's call after a new opening file.
    Read when it fired: by the time the action is settled, the restarted job may have redone
    the batch."""
    path = str(crash["path"])
    if found.gate:
        return _in_sink(found, crash)
    if found.do == "fail":  # the call itself was answered with the error
        return effect(
            True, f"{crash['op']} of {path} failed with {crash.get('errno')} ({found.what})"
        )
    what = f"process group {crash['pgid']} killed {crash['when']} the rename to {path}"
    existed = crash.get("existed")
    if existed is None:
        return effect(None, f"{what} (whether {path} was new is not recorded)")
    if existed:
        return effect(False, f"{what}, but {path} was already there (a batch written again)")
    done = "in place" if crash["when"] == "after" else "never put in place"
    return effect(True, f"{what}: {path} was new and is {done} ({found.what})")


def _in_sink(found: Boundary, crash: Mapping[str, Any]) -> dict[str, Any]:
    """Evidence of a sink boundary: the call on the sink's file after the opening rename
    (``after``), killed in or failed with the errno."""
    path, after = str(crash["path"]), crash.get("after")
    if found.do == "fail":
        what = f"{crash['op']} of {path} failed with {crash.get('errno')}"
    else:
        what = f"process group {crash['pgid']} killed {crash['when']} the {crash['op']} of {path}"
        then = crash.get("next")
        if isinstance(then, dict):  # once that call had returned, before the next
            what += f" had returned, before its {then.get('op')} of {then.get('path')}"
    if not after:
        return effect(None, f"{what} (which opening it followed is not recorded)")
    return effect(True, f"{what}, the first after {after} ({found.what})")


def _restarted(found: Boundary, crash: Mapping[str, Any], killed: Any) -> dict[str, Any]:
    """Evidence of a restart boundary: the filesystem killed a process group started after
    the fault killed the running one (its successor), just after that group's ``k``-th
    commit returned, before its next call."""
    group, then = crash.get("pgid"), crash.get("next")
    what = f"process group {group} killed after its {crash['op']} of {crash['path']}"
    if isinstance(then, dict):
        what += f" had returned, before its {then.get('op')} of {then.get('path')}"
    if group == killed:
        return effect(False, f"{what}: the incarnation the fault killed, not its successor")
    if crash.get("k") != found.k:
        return effect(None, f"{what} (commit #{crash.get('k')}, not #{found.k})")
    return effect(
        True,
        f"{what}: its commit #{found.k} since it started after {killed} was killed ({found.what})",
    )
