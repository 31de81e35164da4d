"""``sealcheck run --leave-running`` end to end (local backend, real Kafka, the real pipeline):
the run is judged as usual, then the harness exits leaving Kafka, the store and a last
incarnation up — Kafka answers on loopback, the incarnation seals what is produced after the
run — until ``sealcheck cleanup`` ends them all, leaving nothing behind. The cleanup runs in a
``finally``: a failing test leaves nothing running either."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from sealcheck.infra import cleanup, procs
from sealcheck.infra.left_running import ENDED, LEFT_RUNNING, LeftRunning, read
from tests.cli_runs import ROOT, sealcheck_run

pytestmark = pytest.mark.integration


def _alive(pid: int, start: str) -> bool:
    return procs.owner_alive(f"{pid}:{start}") and procs.proc_state(pid) not in "XZ"


def _sealed_after_producing(record: LeftRunning, timeout_s: float = 120.0) -> dict[str, int]:
    """Produce a few records after the run and wait until the left incarnation seals them."""
    from confluent_kafka import Producer

    from sealcheck.systems.upsert_source.store import read_uppers

    assert record.database is not None
    before = read_uppers(record.database) or {}
    producer = Producer({"bootstrap.servers": record.bootstrap, "acks": "all"})
    for i in range(10):
        producer.produce(record.topic, key=f"after-{i}", value=b'{"left": "running"}')
    assert producer.flush(30) == 0
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        now = read_uppers(record.database) or {}
        if now.get("data", 0) > before.get("data", 0):
            return now
        time.sleep(0.5)
    raise AssertionError(f"the left incarnation sealed nothing new in {timeout_s}s: {before}")


def _cleanup(store: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sealcheck", "cleanup", "--runs", str(store)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )


@pytest.mark.nightly  # 70-200 s; its parts have unit tests in CI
def test_leave_running_until_cleanup(tmp_path: Path) -> None:
    from confluent_kafka.admin import AdminClient

    store = tmp_path / "store"
    record = None
    flags = ("--name", "leave", "--seed", "2", "--duration", "20", "--interval", "5")
    try:
        code, out, run_dir = sealcheck_run(
            store, *flags, "--nemesis", "kill", "--rate", "200", "--leave-running"
        )
        assert code == 0, out[-3000:]
        assert "verdict: VALID" in out and str(run_dir / "report.html") in out
        record = read(run_dir / LEFT_RUNNING)
        for needle in (
            f"bootstrap {record.bootstrap}  topic upserts",
            f"store:       {record.store}",
            f"database:    {record.database}",
            f"{record.system + ':':<12} {record.incarnation}, pid {record.pid}, log {record.log}",
            f"end them:    sealcheck cleanup --runs {store}",
        ):
            assert needle in out, (needle, out[-2000:])
        assert "--leave-running" not in (run_dir / "test.json").read_text()  # not reproduced
        # the harness has exited; what it left runs and is not taken for a leftover
        left = {p.pid: p for p in record.processes}
        assert record.exit_code is None and record.pid in left
        assert all(_alive(p.pid, p.start) for p in record.processes), record.processes
        roles = {p.role for p in left.values()}
        assert {"kafka-1", record.incarnation, "service", "keeper"} <= roles, roles
        assert not [p for p in cleanup.leftovers() if p.run == record.run_dir]
        topics = AdminClient({"bootstrap.servers": record.bootstrap}).list_topics(timeout=20)
        assert "upserts" in topics.topics
        assert Path(record.store).is_dir() and Path(record.database or "").is_file()
        assert '"event": "started"' in Path(record.log).read_text()
        _sealed_after_producing(record)  # a usable incarnation, not only a live pid
    finally:
        clean = _cleanup(store)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert record is not None
    assert f"ended left-running run {record.run_dir}:" in clean.stdout, clean.stdout
    assert f"stopped pid {record.pid} ({record.incarnation})" in clean.stdout
    deadline = time.monotonic() + 10
    while any(_alive(p.pid, p.start) for p in record.processes) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [p for p in record.processes if _alive(p.pid, p.start)]
    assert not [p for p in cleanup.tagged() if p.run == record.run_dir]
    assert not [p for p in cleanup.leftovers() if p.run == record.run_dir]
    run_dir = Path(record.run_dir)
    assert not (run_dir / "work").exists() and not (run_dir / LEFT_RUNNING).exists()
    assert (run_dir / ENDED).exists() and (run_dir / "logs" / "kafka-1.log").exists()
    again = _cleanup(store)  # idempotent: nothing more to end
    assert again.returncode == 0 and record.run_dir not in again.stdout, again.stdout
