"""The pipeline as a local process for integration tests: start it with chosen arguments and
failpoints, wait for it to start or catch up, stop it — through the same local-process node
the harness uses (:class:`sealcheck.infra.local.LocalProcess`)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from sealcheck.infra.jars import spark_connector_jars
from sealcheck.infra.local import LocalProcess
from sealcheck.systems.api import Progress
from sealcheck.systems.upsert_source.store import read_progress


class PipelineRun:
    """One pipeline incarnation over a SQLite store."""

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        store: str,
        log: Path,
        max_records_per_step: int = 10_000,
        extra_args: tuple[str, ...] = (),
        failpoints: str = "",
    ) -> None:
        self.store = store
        argv = [
            sys.executable,
            "-m",
            "sealcheck_upsert_source",
            "--bootstrap",
            bootstrap,
            "--topic",
            topic,
            "--store",
            store,
            "--max-records-per-step",
            str(max_records_per_step),
            *extra_args,
        ]
        env = {
            "SEALCHECK_SPARK_JARS": ":".join(str(p) for p in spark_connector_jars()),
            "PYTHONUNBUFFERED": "1",
            "SEALCHECK_FAILPOINTS": failpoints,
        }
        # started beside its log, not in the checkout: a Spark driver makes artifacts/ there
        self.proc = LocalProcess("pipeline", argv, env, log, log.absolute().parent)

    def start(self) -> None:
        self.proc.start()

    @property
    def running(self) -> bool:
        return self.proc.alive

    def log_text(self) -> str:
        return self.proc.log_text()

    @property
    def returncode(self) -> int | None:
        """The exit code once it exited (None while it runs)."""
        return self.proc.proc.poll() if self.proc.proc is not None else None

    def wait(self, timeout_s: float) -> int:
        assert self.proc.proc is not None
        return self.proc.proc.wait(timeout=timeout_s)

    def terminate(self, timeout_s: float = 180.0) -> int | None:
        """SIGTERM: the pipeline finishes its step and exits 0. On a loaded machine a step
        through Spark Connect can take far longer than usual (30 s once ran out beside a
        Spark job and the rest of CI), so SIGKILL comes only after ``timeout_s``."""
        return self.proc.stop(timeout_s)

    def wait_started(self, timeout_s: float = 120.0) -> None:
        deadline = time.monotonic() + timeout_s
        while '"event": "started"' not in self.log_text():
            if not self.running:
                raise RuntimeError(f"pipeline exited before starting:\n{self.tail()}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"pipeline not started after {timeout_s:.0f}s")
            time.sleep(0.1)

    def tail(self) -> str:
        return "\n".join(self.log_text().splitlines()[-15:])


def progress(store: str) -> Progress:
    """The store's progress (it must exist)."""
    got = read_progress(store)
    assert got is not None, f"cannot read {store}"
    return got


def wait_caught_up(
    store: str, log_end: dict[int, int], timeout_s: float, run: PipelineRun | None = None
) -> Progress:
    """Poll until the store covers ``log_end``; TimeoutError (with the log tail) otherwise."""
    deadline = time.monotonic() + timeout_s
    last = Progress({}, {})
    while time.monotonic() < deadline:
        last = read_progress(store) or last
        if last.covers(log_end):
            return last
        if run is not None and run.proc.proc is not None and not run.running:
            raise RuntimeError(f"pipeline exited before catching up:\n{run.tail()}")
        time.sleep(0.25)
    raise TimeoutError(
        f"pipeline did not seal the log end {log_end} within {timeout_s:.0f}s "
        f"(sealed: {last.uppers}, bound {last.bound})\n{run.tail() if run else ''}"
    )
