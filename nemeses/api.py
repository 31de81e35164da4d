"""The nemesis protocol, the actions of a planned schedule, and what nemeses act on.

A nemesis plans its actions from the seed before the run starts (:meth:`Nemesis.plan`), then
the runner executes them at their times (:meth:`Nemesis.invoke`, :meth:`Nemesis.resolve`), and
the final phase heals whatever is still broken (:meth:`Nemesis.heal`).

Nemeses never reach into the harness or a backend. They act on *nodes by role* through the
small :class:`Target` protocol — ``sut`` (the system under test's running incarnation),
``broker``, ``database``, a Spark cluster's ``spark-worker`` and ``spark-executor`` — each with
one lifecycle (:class:`sealcheck.core.nodes.Node`: kill, start, pause, resume), and on optional
capabilities (:class:`Failpoints`, :class:`sealcheck.core.nodes.Partitions`). What a role is
(how many nodes, how an action names one, whether it heals itself) comes with the run's roles
in :attr:`PlanInfo.roles`, declared by whoever provides the nodes
(:class:`sealcheck.core.roles.Role`). A nemesis names the capabilities it ``requires`` and the
roles it acts on (:attr:`Nemesis.roles`), so a run that cannot host it is refused before it
starts, and how the report's timeline draws each of its actions (:attr:`Nemesis.marks`). A new
fault is one module plus one line in :data:`sealcheck.nemeses.registry.NEMESES`.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from sealcheck.core.failpoints import FailpointCatalogue
from sealcheck.core.nodes import Disk, Node, Partitions
from sealcheck.core.roles import Role
from sealcheck.core.windows import CrashWindow
from sealcheck.rundir.marks import Mark as Mark  # where a nemesis author finds it
from sealcheck.rundir.names import current_action


@dataclass(frozen=True)
class Action:
    """One planned fault step: at ``at_s`` seconds into the workload, nemesis ``nemesis``
    does ``f`` with ``value``. A schedule is a list of these, saved and replayable as is."""

    at_s: float
    nemesis: str
    f: str
    value: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"at_s": self.at_s, "nemesis": self.nemesis, "f": self.f, "value": self.value}

    @staticmethod
    def from_json(doc: dict[str, Any]) -> Action:
        """The inverse of :meth:`to_json`; a stored schedule's old names are read as the new
        ones (:func:`sealcheck.rundir.names.current_action`)."""
        doc = current_action(doc)
        return Action(float(doc["at_s"]), str(doc["nemesis"]), str(doc["f"]), dict(doc["value"]))


@runtime_checkable
class Replaceable(Protocol):
    """A node whose running incarnation can be given up while it still runs (the supervised
    ``sut`` node): the zombie-writer fault."""

    def replace(self) -> int | str | None:
        """Give up the running incarnation (stalled by the caller) and start a new one beside
        it; the old one's id (None: none was running)."""

    def release(self, wait_s: float = 20.0) -> list[dict[str, Any]]:
        """Thaw every zombie, wait for it to exit (killed after ``wait_s``): per zombie
        ``zombie`` (id), ``code`` and ``killed``."""


class Failpoints(Protocol):
    """Failpoints of the system under test, armed in its running incarnation."""

    def arm(self, spec: str) -> dict[str, Any]:
        """Arm ``spec`` (``name=crash@1``) in the running incarnation and the next ones until
        it fires."""

    def disarm(self) -> bool:
        """Disarm what has not fired; True if something was armed."""

    def armed(self) -> bool:
        """Whether an armed failpoint has yet to fire (firing consumes it)."""


@runtime_checkable
class Versions(Protocol):
    """The versions of the system under test (one that declares two or more): which one its
    incarnations run, switched by the ``upgrade`` nemesis."""

    @property
    def current(self) -> str:
        """The version the next incarnation starts (and the running one, unless switched
        since it started)."""

    def switch(self, version: str) -> None:
        """Every incarnation from the next one on runs ``version``."""


@runtime_checkable
class Terminable(Protocol):
    """A node that can be stopped gracefully (the supervised ``sut`` node): SIGTERM, then
    SIGKILL if it lingers."""

    def terminate(self, timeout_s: float) -> tuple[int | str, int | None] | None:
        """SIGTERM the running incarnation and wait up to ``timeout_s`` for it to exit
        (SIGKILL after that); its id and exit code (None: none was running)."""


class Target(Protocol):
    """What nemeses act on (the session builds it from the backend and the supervisor)."""

    def nodes(self, role: str) -> Sequence[Node]:
        """The nodes of ``role`` (one of :attr:`PlanInfo.roles`): ``sut`` (one: the current
        incarnation), ``broker``, ``database``, ``spark-worker``, ``spark-executor``; none for a
        role the run lacks."""

    @property
    def failpoints(self) -> Failpoints:
        """The system under test's failpoints."""

    @property
    def partitions(self) -> Partitions | None:
        """Network cuts (None without the ``partition`` capability)."""

    def disks(self) -> Mapping[str, Disk]:
        """Lazy filesystems by name (``store``; empty without ``lazy-disk``)."""

    def sealed(self) -> int:
        """How many steps the system under test has sealed, as last observed (the least upper
        of its collections): faults that must be reached wait for progress, not for time."""

    def windows(self) -> Mapping[str, CrashWindow]:
        """The system's crash windows by name (:attr:`PlanInfo.windows`)."""

    def files(self) -> Path | None:
        """The directory the system writes, which its windows' paths are relative to (None:
        it has none on this host)."""

    def versions(self) -> Versions | None:
        """The system's versions (None: it declares fewer than two)."""


#: the least time an armed failpoint is given before it is settled: when the runner falls
#: behind its schedule (a slow fault before, a loaded machine), the next action is due at
#: once, and a point settled then would never have had a chance to fire
MIN_ARMED_S = 3.0
#: ... and beyond that, until the system has sealed this many steps since it was armed (a
#: system that seals steps has passed every step-loop point; an incarnation still starting
#: on a loaded machine has not), but never longer than :data:`MAX_ARMED_S`
ARMED_STEPS = 2
MAX_ARMED_S = 20.0


def chance_s(window_s: float) -> float | None:
    """How long an armed point may wait for the system to progress, when windows are longer
    than the default 3 s (a system that needs 20 s to restart is given faults 20 s apart and
    1.5 windows for a point to fire); None: :data:`MAX_ARMED_S`."""
    longer = round(1.5 * window_s, 1)
    return longer if longer > MAX_ARMED_S else None


def wait_fired(
    target: Target,
    waited_s: float,
    sealed_at_arm: int,
    max_s: float | None = None,
    pending: Callable[[], bool] | None = None,
    more_steps: int = 0,
) -> float:
    """Wait until the armed point fires (``pending()`` is false; default: the failpoint is no
    longer armed), or it has been armed :data:`MIN_ARMED_S` and the system has sealed
    :data:`ARMED_STEPS` + ``more_steps`` steps since (``sealed_at_arm``: ``target.sealed()``
    when it was armed; ``more_steps`` for a point that waits for several occurrences), or
    ``max_s`` (default :data:`MAX_ARMED_S`) have passed; how long it has been armed. Every
    fault that waits for the system to reach a point waits by this one rule."""
    start = time.monotonic() - waited_s
    limit = MAX_ARMED_S if max_s is None else max_s
    still = pending if pending is not None else target.failpoints.armed
    while still():
        armed_s = time.monotonic() - start
        progressed = target.sealed() >= sealed_at_arm + ARMED_STEPS + more_steps
        if armed_s >= limit or (armed_s >= MIN_ARMED_S and progressed):
            return armed_s
        time.sleep(0.05)
    return time.monotonic() - start


def wait_crashed(
    disk: Any,
    seen: int,
    target: Target,
    waited_s: float,
    sealed_at_arm: int,
    max_s: float | None = None,
    more_steps: int = 0,
) -> tuple[list[dict[str, Any]], float]:
    """Wait by :func:`wait_fired`'s rule for a crash point armed on ``disk`` (a
    :class:`sealcheck.core.nodes.Disk` whose counters recorded ``seen`` crashes when it was
    armed) to fire; disarm it if it has not, looking once more (it may fire in between). The
    crashes recorded since the arming (empty: not reached) and how long it was armed."""

    def fired() -> list[dict[str, Any]]:
        return list(disk.counters().get("crashes", [])[seen:])

    armed_s = wait_fired(target, waited_s, sealed_at_arm, max_s, lambda: not fired(), more_steps)
    crashes = fired()
    if not crashes:
        disk.disarm_crash()
        crashes = fired()
    return crashes, armed_s


def running_group(target: Target) -> int | None:
    """The running incarnation's process group (an incarnation leads its own): the only one a
    crash point in the filesystem may count, so the crash it records is the system under
    test's (None: none runs now, and any caller counts)."""
    nodes = target.nodes("sut")
    ident = getattr(nodes[0], "ident", None) if nodes else None
    return ident if isinstance(ident, int) else None


def settled(done: dict[str, Any], key: str, why: str) -> dict[str, Any]:
    """``done`` with its ``outcome``: ``happened`` when ``done[key]`` is set, else ``skipped``
    with ``why`` (every planned fault says in the history whether it happened)."""
    if done.get(key) is None:
        return {**done, "outcome": "skipped", "why": why}
    return {**done, "outcome": "happened"}


@dataclass(frozen=True, kw_only=True)
class PlanInfo:
    """What a nemesis may know when planning: the run's roles and the system under test's
    failpoints. Its fields are given by name (``PlanInfo(roles=..., failpoints=...)``): the
    first field was once ``brokers: int``, and a call from before that is a TypeError here, not
    a run planned from a number taken for roles."""

    #: the run's roles by name (:class:`sealcheck.core.roles.Role`: how many nodes each has,
    #: how an action names one, whether it heals itself), as their providers declared them; a
    #: role the run lacks is absent
    roles: Mapping[str, Role]
    #: the system under test's failpoints and what each kind is for
    failpoints: FailpointCatalogue = field(default_factory=FailpointCatalogue)
    #: the system's crash windows told from outside, by name
    #: (:class:`sealcheck.core.windows.CrashWindow`)
    windows: tuple[str, ...] = ()
    #: its commit boundaries, the edges of the windows opened and closed by files
    #: (:func:`sealcheck.core.windows.boundaries`)
    boundaries: tuple[str, ...] = ()
    #: its store's files whose commits after a restart are boundaries too (a regular
    #: expression over its lazy disk's paths: ``SystemUnderTest.commit_files``)
    commit_files: str = ""
    #: the system under test's versions in upgrade order (``SystemUnderTest.versions``)
    versions: tuple[str, ...] = ()

    def role(self, name: str) -> Role:
        """Role ``name`` of the run; one without nodes (``count`` 0) when the run lacks it
        (such a nemesis is refused before the run: :attr:`Nemesis.roles`)."""
        return self.roles.get(name) or Role(name, count=0)


class Nemesis:
    """Base class: plan, invoke, resolve, heal; setup and teardown default to nothing.

    A subclass is one module plus one line in :data:`sealcheck.nemeses.registry.NEMESES`.
    """

    name = "nemesis"
    #: Capabilities it needs (``sealcheck.core.capabilities.CAPABILITIES``); checked before a run.
    requires: frozenset[str] = frozenset()
    #: The roles whose nodes it acts on (:attr:`PlanInfo.roles`); a run that lacks one is
    #: refused before it starts.
    roles: frozenset[str] = frozenset()

    @property
    def marks(self) -> Mapping[str, Mark]:
        """How the timeline draws each action ``f`` of this nemesis."""
        return {}

    def plan(self, rng: random.Random, start_s: float, window_s: float) -> list[Action]:
        """The actions of one window ``[start_s, start_s + window_s)``, from ``rng`` only."""
        raise NotImplementedError

    def invoke(self, action: Action, target: Target) -> dict[str, Any]:
        """Perform ``action``; what happened goes into the history as the op's value, with
        ``outcome``: ``happened``, ``skipped`` (and ``why``), or ``pending`` when the effect
        comes later — then :meth:`resolve` settles it before the next fault. A nemesis that
        can see whether the fault bit adds ``effect``
        (:func:`sealcheck.nemeses.evidence.effect`: the evidence); else
        :func:`sealcheck.nemeses.evidence.judge` finds it in the supervisor's exits."""
        raise NotImplementedError

    def resolve(self, action: Action, target: Target, waited_s: float) -> dict[str, Any]:
        """Settle a ``pending`` action when the next fault is due (or the fault phase ends),
        ``waited_s`` after it was invoked: make the fault happen now if it has not, and say
        which (the runner records it as an ``outcome`` op)."""
        return {"outcome": "happened"}

    def heal(self, target: Target) -> list[str]:
        """Undo every fault of this nemesis still in place; say what was undone."""
        return []

    def findings(self, target: Target) -> list[dict[str, Any]]:
        """After the heal: what this nemesis saw of its faults' aftermath (e.g. what a
        restarted job did with a batch a crash left to replay), recorded with the heal for
        the coverage (:mod:`sealcheck.nemeses.coverage`). Default: nothing."""
        return []

    def setup(self, target: Target) -> None:
        """Before the first action."""

    def teardown(self, target: Target) -> None:
        """After the final heal."""

    def _act(self, start_s: float, f: str, **value: Any) -> Action:
        return Action(round(start_s, 3), self.name, f, dict(value))

    def _interval(
        self,
        rng: random.Random,
        start_s: float,
        window_s: float,
        on: str,
        off: str,
        share: tuple[float, float] = (0.2, 0.5),
        **value: Any,
    ) -> list[Action]:
        """``on`` in the window's first quarter, ``off`` a seeded ``share`` of it later."""
        at = start_s + rng.uniform(0, window_s / 4)
        return [
            self._act(at, on, **value),
            self._act(at + window_s * rng.uniform(*share), off, **value),
        ]
