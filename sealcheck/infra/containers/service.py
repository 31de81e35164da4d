"""One lifecycle for every service container (a Kafka broker, PostgreSQL), like ducktape's
``Service``: :meth:`~ContainerService.start` the container and wait until it serves,
:meth:`~ContainerService.stop` it, or use it as a context manager.

Containers are started with testcontainers, Ryuk disabled (the harness works offline and
removes its own containers by label: :data:`RUN_LABEL`). A subclass says when it serves —
:meth:`~ContainerService.ready`, by default once its log shows :attr:`~ContainerService.ready_line`
— and may record where it is once started (:meth:`~ContainerService.started`).
"""

from __future__ import annotations

import os
import time
from typing import Any, ClassVar, Self

os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")

from testcontainers.core.config import testcontainers_config
from testcontainers.core.container import DockerContainer

from sealcheck.infra.procs import owner_token, run_tag

testcontainers_config.ryuk_disabled = True

#: Label put on every container Sealcheck starts; its value is the run id.
RUN_LABEL = "dev.sealcheck.run"
#: Label with the ``<pid>:<start time>`` of the harness that owns the container (cleanup).
OWNER_LABEL = "dev.sealcheck.owner"
#: Label with the absolute run directory, as the run's processes carry it (``SEALCHECK_RUN``):
#: a run's start cleans up only the containers of runs of its own archive. Absent outside a
#: run (a test's fixture): only ``sealcheck cleanup --all`` removes those once their owner is
#: gone.
RUN_DIR_LABEL = "dev.sealcheck.run-dir"


def owned_labels(run_id: str) -> dict[str, str]:
    """The labels of a container (or network) of run ``run_id``: the run, the harness that
    owns it, and the run directory when this harness is running one
    (:func:`sealcheck.infra.procs.run_tag`)."""
    run_dir = run_tag()
    mine = {RUN_LABEL: run_id, OWNER_LABEL: owner_token()}
    return mine if run_dir is None else {**mine, RUN_DIR_LABEL: run_dir}


def container_ip(container: Any) -> str:
    """A docker SDK container's IP on its (first) network, re-read from the engine ("" while
    it has none)."""
    container.reload()
    nets = container.attrs["NetworkSettings"]["Networks"]
    return next((n["IPAddress"] for n in nets.values() if n["IPAddress"]), "")


class ContainerService:
    """One server in a container, labelled with its run; a context manager (start, stop).

    ``container`` is the testcontainers container (a subclass adds its environment to it
    before :meth:`start`); ``aliases`` are its DNS names on ``network``."""

    #: What it is, in errors ("Kafka", "PostgreSQL").
    what: ClassVar[str] = "service"
    #: A line its log shows once it serves (the default :meth:`ready`); None: it has none.
    ready_line: ClassVar[str | None] = None
    #: How long :meth:`start` waits for it to serve, by default.
    start_timeout_s: ClassVar[float] = 60.0
    #: How often readiness is probed while waiting.
    poll_s: ClassVar[float] = 0.25

    def __init__(
        self,
        image: str,
        run_id: str,
        network: Any = None,
        aliases: tuple[str, ...] = (),
        labels: dict[str, str] | None = None,
    ) -> None:
        where: dict[str, Any] = {}
        if network is not None:  # a testcontainers Network; the aliases are its DNS names
            where = {"network": network, "network_aliases": list(aliases) or None}
        # every container names the process that owns it, so `sealcheck cleanup` removes it
        # once that process is gone, whoever made it (a run, a test fixture)
        owned = {**owned_labels(run_id), **(labels or {})}
        self.container: Any = DockerContainer(image, labels=owned, **where)
        self.run_id, self.network = run_id, network

    @property
    def wrapped(self) -> Any:
        """The docker SDK container (None before start)."""
        return self.container.get_wrapped_container()

    def ip(self) -> str:
        """The container's IP on its network (re-read: a restart may change it)."""
        return container_ip(self.wrapped)

    def start(self, timeout_s: float | None = None, wait: bool = True) -> None:
        """Start the container and (``wait``) wait until it serves (:meth:`wait_ready`)."""
        self.container.start()
        self.started()
        if wait:
            self.wait_ready(timeout_s)

    def started(self) -> None:
        """Called once the container runs, before waiting (e.g. to record its address)."""

    def where(self) -> str:
        """Where it is reached, for errors ("?" while unknown)."""
        return "?"

    def ready(self) -> bool:
        """Whether it serves now; an exception counts as "not yet" (the last one is named
        when time runs out). By default: its log shows :attr:`ready_line`."""
        if self.ready_line is None:
            raise NotImplementedError(f"{type(self).__name__} says neither ready() nor ready_line")
        logs = self.wrapped.logs().decode(errors="replace")
        return self.ready_line in logs

    def wait_ready(self, timeout_s: float | None = None) -> None:
        """Wait until it serves (:meth:`ready`); a RuntimeError with its last log lines if the
        container exits first, a TimeoutError after ``timeout_s``."""
        wrapped = self.wrapped
        limit = self.start_timeout_s if timeout_s is None else timeout_s
        deadline = time.monotonic() + limit
        last: Exception | None = None
        while time.monotonic() < deadline:
            wrapped.reload()
            if wrapped.status != "running":
                logs = wrapped.logs(tail=20).decode(errors="replace")
                raise RuntimeError(f"{self.what} container exited ({wrapped.status}):\n{logs}")
            try:
                if self.ready():
                    return
            except NotImplementedError:  # a bug of the subclass, not a slow start
                raise
            except Exception as exc:  # still starting
                last = exc
            time.sleep(self.poll_s)
        raise TimeoutError(f"{self.what} at {self.where()} not ready: {last}")

    def stop(self) -> None:
        """Remove the container (forced) and its volumes; a no-op if never started."""
        if self.wrapped is not None:
            self.container.stop(force=True, delete_volume=True)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
