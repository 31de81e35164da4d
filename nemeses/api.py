"""The nemesis protocol, the actions of a planned schedule, and what nemeses act on.

A nemesis plans its actions from the seed before the run starts (:meth:`Nemesis.plan`), then
the runner executes them at their times (:meth:`Nemesis.invoke`, :meth:`Nemesis.resolve`), and
the final phase heals whatever is still broken (:meth:`Nemesis.heal`).

Nemeses never reach into the harness or a backend. They act on *nodes by role* through the
small :class:`Target` protocol — ``pipeline`` (the system under test's running incarnation),
``broker``, ``database`` — each with one lifecycle (:class:`Node`: kill, start, pause, resume),
and on optional capabilities (:class:`Failpoints`, :class:`Partitions`). A nemesis names the
backend capabilities it ``requires`` (so a run that cannot host it is refused before it starts)
and how the report's timeline draws each of its actions (:attr:`Nemesis.marks`). A new fault
is one module plus one line in :data:`sealcheck.nemeses.registry.NEMESES`.
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


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
        """The inverse of :meth:`to_json`."""
        return Action(float(doc["at_s"]), str(doc["nemesis"]), str(doc["f"]), dict(doc["value"]))


class Node(Protocol):
    """A server a nemesis can act on, whatever runs it. Each action returns what the history
    records of the node it acted on (a pid or a container name), or None when there was
    nothing to do (not alive, already alive, not frozen)."""

    @property
    def name(self) -> str:
        """Its name (``kafka-1``, ``postgres``, ``pipeline``)."""

    @property
    def alive(self) -> bool:
        """Whether it runs (frozen counts as alive)."""

    def start(self) -> int | str | None:
        """Start it again and wait until it serves."""

    def kill(self) -> int | str | None:
        """SIGKILL it."""

    def pause(self) -> int | str | None:
        """Freeze it; return once frozen."""

    def resume(self) -> int | str | None:
        """Thaw it."""


@runtime_checkable
class Replaceable(Protocol):
    """A node whose running incarnation can be given up while it still runs (the supervised
    ``pipeline`` node): the zombie-writer fault."""

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


class Partitions(Protocol):
    """Network cuts between nodes (backend capability ``partition``)."""

    def cut(self, kind: str, broker: int) -> dict[str, Any]:
        """Cut a link: ``pipeline-kafka``, ``pipeline-postgres``, ``broker`` (isolate
        ``broker`` from the other brokers) or the one-way ``commit-reply``; ``cut`` says
        which, None and ``reason`` if not."""

    def restore(self, kind: str, broker: int) -> dict[str, Any]:
        """Remove exactly the rules of that cut (``healed`` None if it was not cut)."""

    def fired(self, kind: str) -> bool:
        """Whether a cut that arms itself (``commit-reply``: the database's replies, from the
        incarnation's next commit on) has armed."""

    def heal(self) -> list[str]:
        """Remove every cut still in place."""


class Disk(Protocol):
    """A filesystem that can lose what was written but not fsynced (capability
    ``lazy-disk``)."""

    def drop(self) -> dict[str, Any]:
        """Lose every un-fsynced write now; ``dropped``: the files and bytes lost."""

    def counters(self) -> dict[str, Any]:
        """What is un-fsynced now (``kept_bytes``, ``kept_files``) and what drops lost so far."""


class Target(Protocol):
    """What nemeses act on (the session builds it from the backend and the supervisor)."""

    def nodes(self, role: str) -> Sequence[Node]:
        """The nodes of ``role``: ``pipeline`` (one: the current incarnation), ``broker``,
        ``database``."""

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
    than the pipeline's (a system that needs 20 s to restart is given faults 20 s apart and
    1.5 windows for a point to fire); None: :data:`MAX_ARMED_S`."""
    longer = round(1.5 * window_s, 1)
    return longer if longer > MAX_ARMED_S else None


def wait_fired(
    target: Target, waited_s: float, sealed_at_arm: int, max_s: float | None = None
) -> float:
    """Wait until the armed point fires, or it has been armed :data:`MIN_ARMED_S` and the
    system has sealed :data:`ARMED_STEPS` steps since (``sealed_at_arm``: ``target.sealed()``
    when it was armed), or ``max_s`` (default :data:`MAX_ARMED_S`) have passed; how long it
    has been armed."""
    start = time.monotonic() - waited_s
    limit = MAX_ARMED_S if max_s is None else max_s
    while target.failpoints.armed():
        armed_s = time.monotonic() - start
        progressed = target.sealed() >= sealed_at_arm + ARMED_STEPS
        if armed_s >= limit or (armed_s >= MIN_ARMED_S and progressed):
            return armed_s
        time.sleep(0.05)
    return time.monotonic() - start


def settled(done: dict[str, Any], key: str, why: str) -> dict[str, Any]:
    """``done`` with its ``outcome``: ``happened`` when ``done[key]`` is set, else ``skipped``
    with ``why`` (every planned fault says in the history whether it happened)."""
    if done.get(key) is None:
        return {**done, "outcome": "skipped", "why": why}
    return {**done, "outcome": "happened"}


@dataclass(frozen=True)
class PlanInfo:
    """What a nemesis may know when planning: the shape of the system under test."""

    brokers: int
    pipeline_failpoints: tuple[str, ...]
    startup_failpoints: frozenset[str] = frozenset()
    #: failpoints passed only once the system has run a while (e.g. compaction, which starts
    #: after ``retain_steps`` steps): planned after the others in each cover
    late_failpoints: frozenset[str] = frozenset()
    #: failpoints right after a durable write returned: an ``error`` there is a write that
    #: happened but reported failure (an indeterminate storage operation)
    commit_failpoints: tuple[str, ...] = ()
    #: a failpoint right before a write, where an incarnation that stalls holds a decision made
    #: from state that may go stale (the zombie writer); None: the system has none
    stall_failpoint: str | None = None
    #: workers of the Spark cluster (``--spark cluster``), one executor each
    spark_workers: int = 2


@dataclass(frozen=True)
class Mark:
    """How the report's timeline draws one kind of action: an ``instant`` (a line), or the
    ``start`` / ``end`` of an interval (shaded); an end names the ``opens`` action it closes.
    ``group`` is the legend entry it is drawn under (:data:`GROUPS`)."""

    kind: str
    label: str
    opens: str | None = None
    group: str = "storage"


#: The report's legend groups a :class:`Mark` may name: each has its own colour and lane.
GROUPS = ("kill", "failpoint", "pause", "partition", "outage", "zombie", "storage")


class Nemesis:
    """Base class: plan, invoke, resolve, heal; setup and teardown default to nothing.

    A subclass is one module plus one line in :data:`sealcheck.nemeses.registry.NEMESES`.
    """

    name = "nemesis"
    #: Backend capabilities it needs (``sealcheck.infra.node.CAPABILITIES``); checked before a run.
    requires: frozenset[str] = frozenset()

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
        can see whether the fault bit adds ``effect`` (:func:`sealcheck.nemeses.effects.effect`: the
        evidence); else :func:`sealcheck.nemeses.effects.judge` finds it in the supervisor's
        exits."""
        raise NotImplementedError

    def resolve(self, action: Action, target: Target, waited_s: float) -> dict[str, Any]:
        """Settle a ``pending`` action when the next fault is due (or the fault phase ends),
        ``waited_s`` after it was invoked: make the fault happen now if it has not, and say
        which (the runner records it as an ``outcome`` op)."""
        return {"outcome": "happened"}

    def heal(self, target: Target) -> list[str]:
        """Undo every fault of this nemesis still in place; say what was undone."""
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
