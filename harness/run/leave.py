"""``sealcheck run --leave-running`` (Jepsen's ``--leave-db-running``): once a run is judged and
its report written, Kafka, the store (and its lazy disk, if any), the system's services and a
last incarnation stay up for a person to inspect, until ``sealcheck cleanup`` ends them.

How: the run's children are spawned detached (:func:`sealcheck.infra.procs.mark_children`: no
``PR_SET_PDEATHSIG``); when the session has dumped the topic and exported the store,
:meth:`Kept.take` takes the steps that would stop Kafka and the system's services out of the
teardown (snapshotting the brokers' logs into ``logs/`` as stopping them would have), and after
the verdict :meth:`Kept.leave` starts one more incarnation — the supervisor stopped the last
one to export a quiet store — waits until it has started, and writes ``left-running.json``
(:mod:`sealcheck.infra.left_running`). Any other way out (an error, Ctrl-C) runs :meth:`Kept.stop`
and :func:`sealcheck.infra.cleanup.end_owned`, so nothing is left behind by accident.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from sealcheck.core.nodes import Incarnation
from sealcheck.infra import cleanup, procs
from sealcheck.infra.lazy_disk import lazy_mounts
from sealcheck.infra.left_running import LEFT_RUNNING, LeftProcess, LeftRunning, describe_store
from sealcheck.infra.node import Backend
from sealcheck.rundir.archive import write_json
from sealcheck.systems import Deployment

if TYPE_CHECKING:
    from sealcheck.harness.run.progress import Display
    from sealcheck.harness.run.supervisor import FailpointFile

#: The teardown steps a left-running run keeps (``sealcheck.harness.run.session`` pushes them by
# these names).
STOP_KAFKA = "stop Kafka and the store"
STOP_SERVICES = "stop the system's services"


class Steps(Protocol):
    """The part of :class:`sealcheck.harness.run.session.Teardown` that :meth:`Kept.take` uses
    (named here,
    not imported: the session imports this module)."""

    steps: list[tuple[str, Callable[[], object]]]
    display: Display


def _log_of(pid: int) -> str:
    """The file a process writes its output to (its stdout), "" when not a file."""
    try:
        target = os.readlink(f"/proc/{pid}/fd/1")
    except OSError:
        return ""
    return target if target.startswith("/") else ""


def _started(text: str) -> bool:
    """Whether an incarnation's log has its ``{"event": "started"}`` line (both systems under
    test print it once rehydrated and ready to read Kafka)."""
    for line in text.splitlines():
        if line.startswith("{") and '"started"' in line:
            try:
                if json.loads(line).get("event") == "started":
                    return True
            except (ValueError, AttributeError):
                continue
    return False


class Kept:
    """What a finished session keeps running past its teardown: Kafka and the system's
    services (stopped by :meth:`stop`, or left by :meth:`leave`)."""

    def __init__(
        self,
        backend: Backend,
        deployment: Deployment,
        make: Callable[[int], Incarnation],
        next_incarnation: int,
        failpoints: FailpointFile,
        stops: list[tuple[str, Callable[[], object]]],
        display: Display,
    ) -> None:
        self.backend, self.deployment, self.make = backend, deployment, make
        self.next_incarnation, self.failpoints = next_incarnation, failpoints
        self.stops, self.display = stops, display
        self.node: Incarnation | None = None

    @classmethod
    def take(
        cls,
        teardown: Steps,
        backend: Backend,
        deployment: Deployment,
        make: Callable[[int], Incarnation],
        next_incarnation: int,
        failpoints: FailpointFile,
        logs: Path,
    ) -> Kept:
        """Take the steps that stop Kafka and the system's services out of ``teardown`` and
        copy the brokers' logs so far into ``logs`` (the report reads them)."""
        wanted = (STOP_KAFKA, STOP_SERVICES)
        stops = [step for step in teardown.steps if step[0] in wanted]
        missing = set(wanted) - {what for what, _ in stops}
        if missing:
            raise RuntimeError(f"the teardown has no step {sorted(missing)} to keep running")
        teardown.steps = [step for step in teardown.steps if step[0] not in wanted]
        for node in backend.nodes("broker"):
            (logs / f"{node.name}.log").write_text(node.log_text())
        return cls(backend, deployment, make, next_incarnation, failpoints, stops, teardown.display)

    def stop(self) -> None:
        """Stop everything kept (the last incarnation, the services, Kafka); keeps going
        past errors."""
        steps: list[tuple[str, Callable[[], object]]] = list(self.stops)
        if self.node is not None:
            steps.append(("stop the last incarnation", self.node.stop))
        self.stops = []
        while steps:
            what, fn = steps.pop()
            try:
                fn()
            except Exception as exc:  # keeps going; Ctrl-C does not
                self.display.log(f"warning: {what}: {type(exc).__name__}: {exc}")

    def leave(
        self, run_dir: Path, system: str, topic: str, timeout_s: float = 180.0
    ) -> LeftRunning:
        """Start the last incarnation, wait (up to ``timeout_s``) until it has started — or
        has exited, which the record then says — and write ``left-running.json``."""
        self.failpoints.disarm()
        node = self.node = self.make(self.next_incarnation)
        self.display.update(phase=f"leaving running: starting {node.name}")
        node.start()
        deadline = time.monotonic() + timeout_s
        while node.alive and not _started(node.log_text()) and time.monotonic() < deadline:
            time.sleep(0.2)
        code = None if node.alive else node.wait_exit()
        if code is None and not _started(node.log_text()):
            self.display.log(f"{node.name} runs but has not said it started after {timeout_s:.0f}s")
        record = self._record(run_dir, system, topic, node, code)
        write_json(run_dir / LEFT_RUNNING, record.to_json())
        return record

    def _record(
        self, run_dir: Path, system: str, topic: str, node: Incarnation, code: int | None
    ) -> LeftRunning:
        owner = procs.owner()  # the keeper's token (sealcheck.infra.keeper): it is left running too
        keeper, _, since = owner.partition(":")
        pid = int(node.ident or 0)
        groups = {int(b.ident): b.name for b in self.backend.nodes("broker") if b.ident}
        groups[pid] = node.name
        left = [
            LeftProcess(
                int(keeper),
                since,
                "keeper",
                "python -m sealcheck.infra.keeper",
                _log_of(int(keeper)),
            )
        ]
        for proc in sorted(cleanup.tagged(), key=lambda p: p.pid):
            start = procs.start_time(proc.pid)
            if proc.owner != owner or start is None:
                continue
            try:
                group = os.getpgid(proc.pid)
            except OSError:
                continue
            role = groups.get(
                group, "lazyfs" if "sealcheck.infra.lazyfs" in proc.command else "service"
            )
            left.append(LeftProcess(proc.pid, start, role, proc.command, _log_of(proc.pid)))
        logs = run_dir.absolute() / "logs"
        kept_logs = tuple(
            (p.log, str(logs / f"{p.role}.log"))
            for p in left
            if p.role.startswith("kafka-") and p.pid in groups and p.log
        )
        store, database = describe_store(self.deployment.store)
        return LeftRunning(
            run_dir=str(run_dir.absolute()),
            owner=owner,
            system=system,
            bootstrap=self.backend.bootstrap,
            topic=topic,
            store=store,
            database=database,
            incarnation=node.name,
            pid=pid,
            log=_log_of(pid) or str(logs / f"{node.name}.log"),
            exit_code=code,
            processes=tuple(left),
            mounts=tuple(m.mountpoint for m in lazy_mounts() if m.owner == owner),
            logs=kept_logs,
            left_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        )
