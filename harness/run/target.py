"""What the nemeses act on in a run (:class:`RunTarget`, a :class:`sealcheck.nemeses.Target`)
and the final phase's healing of every nemesis (:func:`heal_all`)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from sealcheck.core.windows import CrashWindow
from sealcheck.harness.run.supervisor import FailpointFile, SupervisedNode
from sealcheck.infra.node import Backend
from sealcheck.nemeses import Nemesis, Node
from sealcheck.nemeses.api import Versions
from sealcheck.nemeses.restarts import FINDINGS
from sealcheck.rundir.history_writer import HistoryWriter


class RunTarget:
    """What the nemeses act on (:class:`sealcheck.nemeses.Target`): the supervised incarnation as
    the ``sut`` node, the system's and the backend's nodes of the run's other ``roles``, the
    failpoints and the network cuts. A role the run lacks has no nodes here, even where the
    backend runs some (the containers backend's PostgreSQL, in a run whose system keeps no store
    there): a fault aimed at it finds nothing to act on."""

    def __init__(
        self,
        backend: Backend,
        sut: SupervisedNode,
        fp: FailpointFile,
        roles: Collection[str],
        disks: Mapping[str, Any] | None = None,
        sealed: Callable[[], int] = lambda: 0,
        own: Callable[[str], Sequence[Node]] = lambda role: [],
        windows: tuple[Mapping[str, CrashWindow], Path | None] = ({}, None),
        versions: Versions | None = None,
    ) -> None:
        self.backend, self.sut, self._failpoints = backend, sut, fp
        self._versions = versions
        self._windows, self._files = windows
        self.roles = frozenset(roles)
        self._own = own
        self._sealed = sealed
        self._partitions = backend.partitions()
        self._disks = dict(disks or {})

    def nodes(self, role: str) -> Sequence[Node]:
        """``sut`` is the supervised incarnation; the run's other roles are the system's own
        (a Spark cluster's workers) or the backend's; a role the run lacks has none."""
        if role not in self.roles:
            return []
        if role == SupervisedNode.name:
            return [self.sut]
        return self._own(role) or self.backend.nodes(role)

    @property
    def failpoints(self) -> FailpointFile:
        """The system under test's failpoint file."""
        return self._failpoints

    @property
    def partitions(self) -> Any:
        """The backend's network cuts (None where it cannot partition)."""
        return self._partitions

    def sealed(self) -> int:
        """Steps the system has sealed, as the observer last saw them."""
        return self._sealed()

    def windows(self) -> Mapping[str, CrashWindow]:
        """The system's crash windows."""
        return self._windows

    def files(self) -> Path | None:
        """The system's directory (its store: a job's directory)."""
        return self._files

    def versions(self) -> Versions | None:
        """The system's versions (None: it declares fewer than two)."""
        return self._versions

    def disks(self) -> Mapping[str, Any]:
        """The lazy filesystems (the system's ``store``, the brokers' ``kafka-N``), when a
        nemesis asked for them."""
        return self._disks


def heal_all(nemeses: dict[str, Nemesis], target: RunTarget, history: HistoryWriter) -> list[str]:
    """Heal every nemesis; each heal is recorded; errors are recorded and skipped."""
    healed = []
    for name, nemesis in nemeses.items():
        found: list[dict[str, Any]] = []
        try:
            done = nemesis.heal(target)
            found = nemesis.findings(target)
        except Exception as exc:
            done = [f"heal failed: {type(exc).__name__}: {exc}"]
        value: dict[str, Any] = {"nemesis": name, "healed": done}
        if found:
            value[FINDINGS] = found
        history.append("nemesis", "info", "heal", value)
        healed += [f"{name}: {d}" for d in done]
    return healed
