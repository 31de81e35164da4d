"""A Spark standalone cluster for a run (``--spark cluster``): one master and two workers, from
the PySpark distribution's own ``deploy`` classes (``spark-class``; nothing downloaded).

On the containers backend each is a container of the system's image on the run's network,
reached by name (workers and their executors run in their own containers, so losing one is
losing a machine); on the local backend each is a local process group on loopback. The
system under test's Spark driver submits to :attr:`SparkCluster.url`; its executors run on the
workers (one core each), with the Kafka connector's jars from the same path as the driver's.

Nemeses reach the cluster by role (:meth:`SparkCluster.nodes`; the roles it declares:
:func:`roles`): ``spark-worker`` (kill it — its executor dies with it — or freeze it; healing
starts it again and it registers again) and ``spark-executor`` (SIGKILL the executor JVM a
worker launched; the worker launches a new one by itself).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sealcheck.core.nodes import Incarnation, Launch
from sealcheck.core.roles import Role
from sealcheck.infra import logwait
from sealcheck.infra.kafka_local import free_ports
from sealcheck.infra.node import Backend
from sealcheck.systems.spark_image import SPARK_CLASS_IN_IMAGE

MASTER_PORT = 7077
#: workers of a run's cluster, one executor each
WORKERS = 2
#: the JVM class of an executor a worker launches
EXECUTOR_CLASS = "org.apache.spark.executor.CoarseGrainedExecutorBackend"
MASTER_READY = "I have been elected leader"
WORKER_READY = "Successfully registered with master"


def spark_class(in_image: bool) -> str:
    """The distribution's ``spark-class`` script, in the image or in this venv."""
    if in_image:
        return SPARK_CLASS_IN_IMAGE
    import pyspark

    return str(Path(pyspark.__file__).parent / "bin" / "spark-class")


def _children(root: int) -> list[int]:
    """Every descendant pid of ``root`` on this host (containers' processes included)."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        parents.setdefault(ppid, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        for child in parents.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def executor_pids(worker_pid: int) -> list[int]:
    """The executor JVMs among the descendants of a worker's host pid."""
    found = []
    for pid in _children(worker_pid):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                argv = fh.read()
        except OSError:
            continue
        if EXECUTOR_CLASS.encode() in argv and b"java" in argv.split(b"\0", 1)[0]:
            found.append(pid)
    return found


class Worker:
    """One worker as a :class:`~sealcheck.infra.node.Node` that can be started again after a
    kill (a new process, or the same container started again: same name, same address)."""

    def __init__(self, cluster: SparkCluster, index: int) -> None:
        self.cluster, self.index = cluster, index
        self.name = f"spark-worker-{index + 1}"
        self.node: Incarnation = cluster.service(self.name, cluster.worker_launch(self))

    @property
    def ident(self) -> int | str | None:
        """The worker's host pid."""
        return self.node.ident

    @property
    def alive(self) -> bool:
        """Whether the worker runs (frozen counts)."""
        return self.node.alive

    @property
    def frozen(self) -> bool:
        """Whether it is frozen."""
        return self.node.frozen

    def start(self) -> int | str | None:
        """Start it (again: a new process, or the killed container as itself) and wait until
        the master registered it; None when it was running."""
        if self.node.alive:
            return None
        seen = len(self.node.log_text())  # logs are appended to across starts
        self.node.start()
        self.cluster.wait_log(self.node, WORKER_READY, since=seen)
        return self.node.ident

    def kill(self) -> int | str | None:
        """SIGKILL the worker and everything it runs (its executor)."""
        return self.node.kill()

    def pause(self) -> int | str | None:
        """Freeze the worker and its executor."""
        return self.node.pause()

    def resume(self) -> int | str | None:
        """Thaw it."""
        return self.node.resume()

    def log_text(self) -> str:
        """The worker's log."""
        return self.node.log_text()


class Executor:
    """The executor JVM of one worker: killed alone (the worker launches another)."""

    def __init__(self, worker: Worker) -> None:
        self.worker = worker
        self.name = f"executor-{worker.index + 1}"

    @property
    def ident(self) -> int | str | None:
        """The executor's host pid (None: none runs)."""
        pids = executor_pids(int(self.worker.ident)) if isinstance(self.worker.ident, int) else []
        return pids[0] if pids else None

    @property
    def alive(self) -> bool:
        """Whether its worker runs an executor."""
        return self.ident is not None

    @property
    def frozen(self) -> bool:
        """Whether its worker is frozen."""
        return self.worker.frozen

    def start(self) -> int | str | None:
        """Nothing: the worker starts executors itself."""
        return None

    def kill(self) -> int | str | None:
        """SIGKILL the executor JVM (host pid), not its worker."""
        pid = self.ident
        if pid is None or not isinstance(pid, int):
            return None
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            return None
        return pid

    def pause(self) -> int | str | None:
        """Not offered (pause the worker instead)."""
        return None

    def resume(self) -> int | str | None:
        """Not offered."""
        return None

    def log_text(self) -> str:
        """Its worker's log."""
        return self.worker.log_text()


def roles(workers: int = WORKERS) -> dict[str, Role]:
    """The roles of a cluster of ``workers`` workers (capability ``spark-cluster``): its
    workers (``spark-worker``) and their executors (``spark-executor``: a worker launches a new
    one by itself, so a kill of one heals itself; its actions say ``executor``); an action
    names either by its worker's index (``worker``)."""
    need = frozenset({"spark-cluster"})
    return {
        "spark-worker": Role("spark-worker", workers, "worker", requires=need),
        "spark-executor": Role(
            "spark-executor", workers, "worker", self_healing=True, requires=need, noun="executor"
        ),
    }


class SparkCluster:
    """Master and workers of one run on ``backend`` (start, restart what died, stop)."""

    def __init__(
        self,
        backend: Backend,
        logs: Path,
        workers: int = WORKERS,
        shared: tuple[str, ...] = (),
        timeout_s: float = 180.0,
        image: Callable[[], str] | None = None,
    ) -> None:
        self.backend, self.logs, self.timeout_s = backend, logs, timeout_s
        # directories the executors must see at the driver's path, and the image whose jars
        # they load: the system under test's (None: it runs on local processes only)
        self.shared, self.image = shared, image
        self.in_image = bool(backend.runs_images)
        if self.in_image and image is None:
            raise ValueError("a Spark cluster in containers needs the system's image")
        host = backend.address("spark-master")
        self.port = MASTER_PORT if self.in_image else free_ports(1)[0]
        self.url = f"spark://{host}:{self.port}"
        self.master = self.service("spark-master", self._master_launch(host))
        self.workers = [Worker(self, i) for i in range(workers)]
        self.executors = [Executor(w) for w in self.workers]

    def service(self, name: str, launch: Launch) -> Incarnation:
        """A node of the cluster on the backend, logging to ``logs/<name>.log``."""
        return self.backend.service(launch, name, self.logs / f"{name}.log")

    def _launch(self, args: list[str], env: dict[str, str]) -> Launch:
        cmd = spark_class(self.in_image)
        local = {"SPARK_LOCAL_IP": "127.0.0.1"}
        env = {"SPARK_DAEMON_MEMORY": "256m", **env}  # master and worker JVMs stay small
        return Launch(
            program=(spark_class(False), *args),
            args=(),
            env=env,
            local_env=local,
            image=self.image,
            entrypoint=(cmd, *args) if self.in_image else None,
            shared=self.shared,
        )

    def _master_launch(self, host: str) -> Launch:
        web = 0 if self.in_image else free_ports(1)[0]
        args = ["org.apache.spark.deploy.master.Master", "--host", host, "--port", str(self.port)]
        return self._launch([*args, "--webui-port", str(web or 8080)], {})

    def worker_launch(self, worker: Worker) -> Launch:
        """A worker with one core and 1 GiB for its executor, registering at the master."""
        host = self.backend.address(worker.name)
        web = 8081 if self.in_image else free_ports(1)[0]
        # absolute: a local worker starts in a directory of its own (its scratch)
        here = (self.logs.parent / "work" / worker.name).absolute()
        work = "/tmp/spark-work" if self.in_image else str(here)
        args = ["org.apache.spark.deploy.worker.Worker", self.url, "--host", host]
        args += ["--cores", "1", "--memory", "1g", "--webui-port", str(web), "--work-dir", work]
        return self._launch(args, {})

    def wait_log(self, node: Incarnation, text: str, since: int = 0) -> None:
        """Wait until ``node`` logs ``text`` (past offset ``since``); raise on exit/time-out."""
        logwait.wait_log(node, text, self.timeout_s, since)

    def start(self) -> None:
        """Start the master, then every worker, each once it can register."""
        self.master.start()
        self.wait_log(self.master, MASTER_READY)
        for w in self.workers:
            w.start()

    def heal(self) -> list[str]:
        """Thaw and start again every worker that is frozen or down."""
        done = []
        for w in self.workers:
            if w.frozen:
                w.resume()
                done.append(f"resumed {w.name}")
            if w.start() is not None:
                done.append(f"started {w.name}")
        return done

    def nodes(self, role: str) -> list[Any]:
        """``spark-worker``: the workers; ``spark-executor``: each worker's executor."""
        if role == "spark-worker":
            return list(self.workers)
        return list(self.executors) if role == "spark-executor" else []

    def stop(self) -> None:
        """Stop the workers, then the master (keeping going past errors)."""
        errors = []
        for node in [*(w.node for w in self.workers), self.master]:
            try:
                node.stop(10)
            except Exception as exc:  # teardown keeps going; Ctrl-C does not
                errors.append(f"{node.name}: {exc}")
        if errors:
            raise RuntimeError("stopping the Spark cluster: " + "; ".join(errors))
