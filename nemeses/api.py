"""The nemesis protocol, the actions of a planned schedule, and what nemeses act on.

A nemesis plans its actions from the seed before the run starts (:meth:`Nemesis.plan`), then
the runner executes them at their times (:meth:`Nemesis.invoke`), and the final phase heals
whatever is still broken (:meth:`Nemesis.heal`). Nemeses never reach into the harness: they
act through the small :class:`Target` protocol the runner provides.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Protocol


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


class Target(Protocol):
    """What a nemesis can act on (the runner implements it for its backend)."""

    brokers: int

    def pipeline_kill(self) -> dict[str, Any]:
        """SIGKILL the running pipeline incarnation."""

    def pipeline_pause(self) -> dict[str, Any]:
        """Stop (SIGSTOP) the running pipeline incarnation."""

    def pipeline_resume(self) -> dict[str, Any]:
        """Continue a stopped pipeline incarnation."""

    def arm_failpoint(self, spec: str) -> dict[str, Any]:
        """Arm a failpoint spec in the running pipeline (and later ones until it fires)."""

    def disarm_failpoints(self) -> bool:
        """Disarm every failpoint; True if one was armed."""

    def failpoint_armed(self) -> bool:
        """Whether an armed failpoint is still waiting to fire (the pipeline consumes it by
        firing)."""

    def broker_kill(self, index: int) -> dict[str, Any]:
        """SIGKILL broker ``index`` (0-based)."""

    def broker_start(self, index: int) -> dict[str, Any]:
        """Start broker ``index`` again (a no-op if it runs)."""

    def brokers_down(self) -> list[int]:
        """Indexes of the brokers not running."""

    def broker_pause(self, index: int) -> dict[str, Any]:
        """Freeze broker ``index``; return once it is frozen."""

    def broker_resume(self, index: int) -> dict[str, Any]:
        """Thaw broker ``index`` (``resumed`` is None when it was not frozen)."""

    def postgres_kill(self) -> dict[str, Any]:
        """SIGKILL the PostgreSQL server (containers backend)."""

    def postgres_start(self) -> dict[str, Any]:
        """Start the PostgreSQL server again (a no-op if it runs)."""

    def partition_start(self, kind: str, broker: int) -> dict[str, Any]:
        """Cut a link: ``pipeline-kafka``, ``pipeline-postgres`` or ``broker`` (isolate
        ``broker`` from the other brokers); say which rules were added."""

    def partition_end(self, kind: str, broker: int) -> dict[str, Any]:
        """Remove exactly the rules of that cut."""

    def heal_partitions(self) -> list[str]:
        """Remove every cut still in place."""


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


class Nemesis:
    """Base class: plan, invoke, heal; setup and teardown default to nothing.

    A subclass is one module plus one line in :data:`nemeses.registry.NEMESES`.
    """

    name = "nemesis"

    def plan(self, rng: random.Random, start_s: float, window_s: float) -> list[Action]:
        """The actions of one window ``[start_s, start_s + window_s)``, from ``rng`` only."""
        raise NotImplementedError

    def invoke(self, action: Action, target: Target) -> dict[str, Any]:
        """Perform ``action``; what happened goes into the history as the op's value, with
        ``outcome``: ``happened``, ``skipped`` (and ``why``), or ``pending`` when the effect
        comes later — then :meth:`resolve` settles it before the next fault."""
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
