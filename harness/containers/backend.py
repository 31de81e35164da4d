"""The containers backend: three brokers, PostgreSQL and pipeline incarnations in containers
on the run's network, and what the nemeses act on there (the Docker API and iptables)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg

from checkers.files import write_export
from harness.containers.cuts import Cut
from harness.containers.images import kafka_image, postgres_image
from harness.containers.pipeline_image import pipeline_image
from harness.containers.topology import PipelineContainer, Topology, container_ip
from harness.kafka_admin import create_topic
from harness.supervisor import Incarnation, SupervisedPipeline, Supervisor


def export_postgres(dsn: str, out_dir: Path, batch: int = 200_000) -> None:
    """Copy a PostgreSQL store to ``updates.parquet`` + ``frontiers.json`` in ``out_dir``
    (the checkers' export format, :func:`checkers.files.write_export`)."""
    with psycopg.connect(dsn) as con:
        rows = con.execute("SELECT collection, upper, since FROM frontiers WHERE upper > 0")
        frontiers = {c: {"upper": int(u), "since": int(s)} for c, u, s in rows}
        with con.cursor(name="export") as cur:  # server-side: streamed in batches
            cur.execute("SELECT collection, key, val, ts, diff FROM updates")
            write_export(frontiers, iter(lambda: cur.fetchmany(batch), []), out_dir)


class ContainersBackend:
    """The run's containers (see :mod:`harness.containers.topology`)."""

    name = "containers"

    def __init__(self, brokers: int, work: Path, run_dir: Path) -> None:
        images = {
            "kafka": kafka_image(),
            "postgres": postgres_image(),
            "pipeline": pipeline_image(),
        }
        self.run_dir, self.work = run_dir, work
        run_id = f"{run_dir.parent.name}-{run_dir.name}".lower()
        self.topo = Topology(run_id, brokers, images)
        self.target_: ContainerTarget | None = None

    @property
    def bootstrap(self) -> str:
        """Every broker's ``ip:9092`` (reachable from the host and from the network)."""
        return self.topo.bootstrap

    @property
    def store(self) -> str:
        """The PostgreSQL store's DSN."""
        return self.topo.store_dsn

    def start(self, topic: str, partitions: int) -> None:
        """Start brokers and PostgreSQL, create the topic."""
        self.topo.start()
        create_topic(self.bootstrap, topic, partitions, len(self.topo.brokers))

    def incarnations(
        self, topic: str, args: list[str], max_records: int, failpoint_file: Path
    ) -> Callable[[int], Incarnation]:
        """A factory of pipeline incarnations (containers)."""

        def make(n: int) -> Incarnation:
            # Inside the network PostgreSQL is reached by name, whatever its IP after a restart.
            store = f"postgresql://postgres@postgres:5432/{self.topo.store_db}"
            argv = [
                "--bootstrap",
                self.bootstrap,
                "--topic",
                topic,
                "--store",
                store,
                "--max-records-per-step",
                str(max_records),
                *args,
            ]
            return self.topo.pipeline(
                argv, self.run_dir / "logs" / f"pipeline-{n}.log", failpoint_file.parent
            )

        return make

    def target(self, supervisor: Supervisor) -> ContainerTarget:
        """What the nemeses act on."""
        self.target_ = ContainerTarget(supervisor, self.topo)
        return self.target_

    def on_start(self, incarnation: Incarnation) -> None:
        """A new incarnation has a new network namespace: re-apply the pipeline's cuts."""
        if self.target_ is not None and isinstance(incarnation, PipelineContainer):
            self.target_.reapply(incarnation)

    def export_store(self) -> None:
        """Export the PostgreSQL store into the run directory as Parquet."""
        export_postgres(self.store, self.run_dir / "persist")

    def stop(self) -> None:
        """Keep the brokers' and PostgreSQL's logs, then remove every container and the
        network."""
        for i, b in enumerate(self.topo.brokers):
            with contextlib.suppress(Exception):
                (self.run_dir / "logs" / f"kafka-{i + 1}.log").write_bytes(b.wrapped.logs())
        with contextlib.suppress(Exception):
            logs = self.topo.postgres.container.get_wrapped_container().logs()
            (self.run_dir / "logs" / "postgres.log").write_bytes(logs)
        self.topo.stop()


class ContainerTarget(SupervisedPipeline):
    """:class:`nemeses.Target` through the Docker API (kill, start, pause) and iptables."""

    def __init__(self, supervisor: Supervisor, topo: Topology) -> None:
        self.supervisor, self.topo = supervisor, topo
        self.brokers = len(topo.brokers)
        self.tag = f"sealcheck:{topo.run_id}"
        self.cuts: dict[tuple[str, int], Cut] = {}

    # -- brokers and PostgreSQL ---------------------------------------------------------
    def broker_kill(self, index: int) -> dict[str, Any]:
        """SIGKILL one broker container."""
        box = self.topo.brokers[index].wrapped
        box.kill()
        return {"broker": index, "killed": box.name}

    def broker_start(self, index: int) -> dict[str, Any]:
        """Start a broker container again; wait until every broker is registered."""
        box = self.topo.brokers[index].wrapped
        box.reload()
        if box.status == "running":
            return {"broker": index, "started": None}
        started = time.monotonic()
        box.start()
        self.topo.wait_brokers(self.brokers, 90)
        return {
            "broker": index,
            "started": box.name,
            "ready_s": round(time.monotonic() - started, 2),
        }

    def brokers_down(self) -> list[int]:
        """Brokers whose container is not running."""
        down = []
        for i, b in enumerate(self.topo.brokers):
            b.wrapped.reload()
            if b.wrapped.status != "running":
                down.append(i)
        return down

    def broker_pause(self, index: int) -> dict[str, Any]:
        """Freeze one broker container (cgroup freezer)."""
        box = self.topo.brokers[index].wrapped
        box.pause()
        return {"broker": index, "paused": box.name}

    def broker_resume(self, index: int) -> dict[str, Any]:
        """Thaw one broker container if it is frozen."""
        box = self.topo.brokers[index].wrapped
        box.reload()
        if box.status != "paused":
            return {"broker": index, "resumed": None}
        box.unpause()
        return {"broker": index, "resumed": box.name}

    def postgres_kill(self) -> dict[str, Any]:
        """SIGKILL the PostgreSQL container."""
        box = self.topo.postgres.container.get_wrapped_container()
        box.kill()
        return {"killed": box.name}

    def postgres_start(self) -> dict[str, Any]:
        """Start PostgreSQL again (a no-op if it runs)."""
        box = self.topo.postgres.container.get_wrapped_container()
        box.reload()
        if box.status == "running":
            return {"started": None}
        box.start()
        self.topo.postgres.start_wait()
        return {"started": box.name}

    # -- partitions ---------------------------------------------------------------------
    def _cut(self, kind: str, broker: int) -> Cut | None:
        if kind == "broker":
            box = self.topo.brokers[broker].wrapped
            box.reload()
            peers = [b.ip() for i, b in enumerate(self.topo.brokers) if i != broker]
            return Cut(int(box.attrs["State"]["Pid"]), tuple(peers), self.tag)
        pid = self.supervisor.current_pid()
        if pid is None:
            return None
        if kind == "pipeline-kafka":
            peers = [b.ip() for b in self.topo.brokers]
        else:
            peers = [container_ip(self.topo.postgres.container.get_wrapped_container())]
        return Cut(pid, tuple(peers), self.tag)

    def partition_start(self, kind: str, broker: int) -> dict[str, Any]:
        """Cut the link; the rules added are returned (and recorded in the history)."""
        key = (kind, broker if kind == "broker" else 0)
        if key in self.cuts:
            return {"cut": None, "reason": "already cut"}
        cut = self._cut(kind, broker)
        if cut is None:
            return {"cut": None, "reason": "no pipeline incarnation running"}
        self.cuts[key] = cut
        cut.apply()
        return {"cut": kind, "pid": cut.pid, "peers": list(cut.peers), "rules": len(cut.rules)}

    def partition_end(self, kind: str, broker: int) -> dict[str, Any]:
        """Remove exactly that cut's rules."""
        cut = self.cuts.pop((kind, broker if kind == "broker" else 0), None)
        if cut is None:
            return {"healed": None}
        return {"healed": kind, "deleted": cut.heal()}

    def heal_partitions(self) -> list[str]:
        """Remove every cut still in place."""
        out = [f"{k[0]}: deleted {c.heal()} rules" for k, c in self.cuts.items()]
        self.cuts.clear()
        return out

    def reapply(self, incarnation: PipelineContainer) -> None:
        """Cut a new pipeline incarnation's links like its predecessor's were."""
        pid = incarnation.pid
        for (kind, _), cut in list(self.cuts.items()):
            if kind.startswith("pipeline-") and pid is not None and cut.pid != pid:
                cut.heal()  # the old namespace is gone; this only forgets its rules
                cut.pid = pid
                with contextlib.suppress(Exception):
                    cut.apply()
