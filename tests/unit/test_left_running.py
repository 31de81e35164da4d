"""``sealcheck run --leave-running`` on its own: the flag and its bad combinations, the
``left-running.json`` record, and how cleanup tells a run left running from a leftover and
ends it (with real, harmless ``sleep`` processes)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sealcheck.harness.cli.app import build_parser, main
from sealcheck.harness.run.config import ConfigError, TestConfig, build_config, load_config
from sealcheck.harness.run.flags import to_flags
from sealcheck.infra import cleanup, procs
from sealcheck.infra.left_running import (
    CLEANUP_COMMAND,
    ENDED,
    LEFT_RUNNING,
    LeftProcess,
    LeftRunning,
    LeftRunningError,
    describe_store,
    left_running_root,
    read,
)

RECORD = LeftRunning(
    run_dir="/runs/chaos/20260101T000000",
    owner="123:456",
    system="upsert-source",
    bootstrap="127.0.0.1:40001",
    topic="upserts",
    store="/runs/chaos/20260101T000000/work",
    database="/runs/chaos/20260101T000000/work/store.db",
    incarnation="sut-7",
    pid=4242,
    log="/runs/chaos/20260101T000000/logs/sut-7.log",
    exit_code=None,
    processes=(
        LeftProcess(4000, "99", "kafka-1", "java kafka.Kafka", "/w/kafka.log"),
        LeftProcess(4100, "98", "service", "java SparkConnectServer", "/l/spark-server.log"),
        LeftProcess(4242, "97", "sut-7", "python -m sealcheck_upsert_source", "/l/sut-7.log"),
    ),
    mounts=("/runs/chaos/20260101T000000/work/store",),
    logs=(("/w/kafka.log", "/runs/chaos/20260101T000000/logs/kafka-1.log"),),
    left_at="2026-01-01T00:00:00Z",
)


def test_the_record_round_trips_through_its_file(tmp_path: Path) -> None:
    path = tmp_path / LEFT_RUNNING
    path.write_text(json.dumps(RECORD.to_json()))
    assert read(path) == RECORD
    assert json.loads(path.read_text())["cleanup"] == f"{CLEANUP_COMMAND} --runs /runs"


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        (lambda d: d.pop("kafka"), "kafka is missing"),
        (lambda d: d["incarnation"].update(pid="x"), "incarnation.pid='x' is not a whole number"),
        (lambda d: d["incarnation"].update(pid=True), "incarnation.pid=True is not a whole"),
        (lambda d: d["processes"][1].pop("start"), "processes[1].start is missing"),
        (lambda d: d["store"].update(database=3), "store.database=3 is not text or null"),
        (lambda d: d.update(mounts=[1]), "mounts=[1] is not a list of paths"),
        (lambda d: d.update(logs=[["a"]]), "logs=[['a']] is not a list of [from, to] paths"),
    ],
)
def test_a_bad_record_names_its_field_and_value(change: object, fragment: str) -> None:
    doc = RECORD.to_json()
    change(doc)  # type: ignore[operator]
    with pytest.raises(LeftRunningError) as caught:
        LeftRunning.from_json(doc, "x/left-running.json")
    assert fragment in str(caught.value) and str(caught.value).startswith("x/left-running.json")


def test_unreadable_records(tmp_path: Path) -> None:
    with pytest.raises(LeftRunningError, match="does not exist"):
        read(tmp_path / LEFT_RUNNING)
    (tmp_path / LEFT_RUNNING).write_text("{not json")
    with pytest.raises(LeftRunningError, match="cannot be read as JSON"):
        read(tmp_path / LEFT_RUNNING)
    with pytest.raises(LeftRunningError, match="is not a JSON object"):
        LeftRunning.from_json([1, 2])


def test_the_printed_lines_say_how_to_reach_everything_and_end_it() -> None:
    text = "\n".join(RECORD.lines())
    for needle in (
        "bootstrap 127.0.0.1:40001  topic upserts",
        "kafka-1 pid 4000, log /w/kafka.log",
        "store:       /runs/chaos/20260101T000000/work",
        "database:    /runs/chaos/20260101T000000/work/store.db",
        "upsert-source: sut-7, pid 4242, log /runs/chaos/20260101T000000/logs/sut-7.log",
        "service:     pid 4100, log /l/spark-server.log",
        "mount:       /runs/chaos/20260101T000000/work/store",
        "end them:    sealcheck cleanup --runs /runs",  # its archive's cleanup ends it
    ):
        assert needle in text, needle
    exited = LeftRunning(**{**RECORD.__dict__, "exit_code": 4}).lines()
    assert any("sut-7 exited with code 4" in line for line in exited)


def test_describe_store(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    db.write_text("")
    assert describe_store(str(db)) == (str(tmp_path), str(db))
    assert describe_store(str(tmp_path)) == (str(tmp_path), None)
    assert describe_store("postgresql://postgres@h/db") == ("", "postgresql://postgres@h/db")


def test_left_running_root_is_the_nearest_directory_with_a_record(tmp_path: Path) -> None:
    inside = tmp_path / "work" / "store"
    inside.mkdir(parents=True)
    assert left_running_root(inside) is None
    (tmp_path / LEFT_RUNNING).write_text("{}")
    assert left_running_root(inside) == tmp_path == left_running_root(tmp_path)


def test_the_flag_is_a_harness_setting_kept_out_of_saved_configs() -> None:
    cfg = load_config(None, {"leave_running": True})
    assert cfg.leave_running and "leave_running" not in cfg.to_json()
    assert "--leave-running" not in to_flags(cfg) and "leave" not in " ".join(to_flags(cfg))
    assert build_config(cfg.to_json()) == TestConfig()  # a replay does not leave things running
    from sealcheck.harness.cli.run import _overrides

    args = build_parser().parse_args(["run", "--leave-running"])
    assert _overrides(args) == {"leave_running": True}
    assert "leave_running" not in _overrides(build_parser().parse_args(["run"]))


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (
            ["run", "--backend", "containers", "--leave-running"],
            "leave_running=true (--leave-running) with backend='containers': it works on the "
            "local backend only",
        ),
        (["run", "--set", "leave_running=3"], "config.leave_running=3: expected true or false"),
        (
            ["run", "--leave-running", "--set", "leave_running=true"],
            "leave_running is already given (--leave-running)",
        ),
    ],
)
def test_bad_combinations_are_one_line_and_254(
    argv: list[str], fragment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 254
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and fragment in err[0], err


def test_a_replay_may_be_left_running(tmp_path: Path) -> None:
    from sealcheck.harness.cli.run import _replay

    run = tmp_path / "run"
    run.mkdir()
    saved = {"config": TestConfig(seed=5).to_json(), "schedule": []}
    (run / "test.json").write_text(json.dumps(saved))
    args = argparse.Namespace(replay=run, config=None)
    cfg, schedule = _replay(args, {"leave_running": True})
    assert cfg.leave_running and cfg.seed == 5 and schedule == []
    assert not _replay(args, {})[0].leave_running
    with pytest.raises(ConfigError, match="so --seed cannot be given with it"):
        _replay(args, {"leave_running": True, "seed": 2})


def _dead_owner() -> str:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    return f"{dead.pid}:0"


def _sleep(run: str, owner: str, cwd: Path) -> subprocess.Popen[bytes]:
    """A tagged ``sleep``, returned once its environment can be read (it has exec'd)."""
    env = {**os.environ, procs.RUN_ENV: run, procs.OWNER_ENV: owner}
    proc = subprocess.Popen(["sleep", "120"], env=env, cwd=cwd, start_new_session=True)
    deadline = time.monotonic() + 10
    while proc.pid not in {p.pid for p in cleanup.tagged()} and time.monotonic() < deadline:
        time.sleep(0.02)
    return proc


def _exited(proc: subprocess.Popen[bytes], timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    return proc.poll() is not None


def test_cleanup_ends_a_left_running_run_and_only_then(tmp_path: Path) -> None:
    run = tmp_path / "store" / "t" / "20260101T000000"
    (run / "work" / "kafka").mkdir(parents=True)
    (run / "logs").mkdir()
    (run / "work" / "kafka" / "kafka.log").write_text("the broker's last words\n")
    record = LeftRunning(
        **{
            **RECORD.__dict__,
            "run_dir": str(run),
            "processes": (),
            "mounts": (),
            "logs": ((str(run / "work/kafka/kafka.log"), str(run / "logs/kafka-1.log")),),
        }
    )
    (run / LEFT_RUNNING).write_text(json.dumps(record.to_json()))
    # one process names the run by a relative path, as a harness with `--runs store` does
    left = _sleep("store/t/20260101T000000", _dead_owner(), tmp_path)
    try:
        assert cleanup.run_dir_of(left.pid, "store/t/20260101T000000") == run
        assert left.pid not in {p.pid for p in cleanup.leftovers()}  # left on purpose
        assert run in cleanup.left_running_runs()
        ended = cleanup.end_left_running(run, timeout_s=5)
        assert _exited(left)
        assert any(f"pid {left.pid} " in p for p in ended.processes) and not ended.errors
        assert ended.removed == str(run / "work") and not (run / "work").exists()
        assert (run / "logs" / "kafka-1.log").read_text() == "the broker's last words\n"
        assert not (run / LEFT_RUNNING).exists()
        assert json.loads((run / ENDED).read_text())["ended"]["processes"] == ended.processes
        again = cleanup.end_left_running(run)  # idempotent: nothing more to end
        assert (again.processes, again.mounts, again.removed) == ([], [], None)
        assert run not in cleanup.left_running_runs([tmp_path / "store"])
    finally:
        left.kill()
        left.wait()


def test_end_owned_kills_only_that_harness_children(tmp_path: Path) -> None:
    doomed = _sleep(str(tmp_path), "4194999:sealcheck-test", tmp_path)
    other = _sleep(str(tmp_path), procs.owner_token(), tmp_path)
    try:
        gone = cleanup.end_owned("4194999:sealcheck-test")
        assert [p.pid for p in gone] == [doomed.pid] and _exited(doomed)
        assert other.poll() is None
    finally:
        for p in (doomed, other):
            p.kill()
            p.wait()


def _keeper(harness: str, run: Path) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", "sealcheck.infra.keeper", harness, str(run)]
    env = {k: v for k, v in os.environ.items() if k != procs.OWNER_ENV}
    return subprocess.Popen(argv, env=env, start_new_session=True)


@pytest.mark.parametrize("left", [False, True])
def test_the_keeper_ends_its_children_unless_the_run_was_left(tmp_path: Path, left: bool) -> None:
    harness = subprocess.Popen(["sleep", "120"])
    keeper = _keeper(procs.owner_token(harness.pid), tmp_path)
    child = _sleep(str(tmp_path), procs.owner_token(keeper.pid), tmp_path)
    try:
        assert child.pid not in {p.pid for p in cleanup.leftovers()}  # its owner lives
        if left:
            (tmp_path / LEFT_RUNNING).write_text("{}")
        harness.kill()
        harness.wait()
        if not left:  # a harness that died: the keeper kills what it owns, then exits
            assert _exited(child) and child.returncode == -9
            assert _exited(keeper) and keeper.returncode == 0
            return
        time.sleep(1.5)
        assert child.poll() is None and keeper.poll() is None  # kept until cleanup
        (tmp_path / LEFT_RUNNING).unlink()  # ended: the keeper goes
        assert _exited(keeper) and keeper.returncode == 0
    finally:
        for p in (harness, keeper, child):
            p.kill()
            p.wait()


def test_detached_children_are_owned_by_a_keeper(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(procs.RUN_ENV, raising=False)
    monkeypatch.delenv(procs.OWNER_ENV, raising=False)
    monkeypatch.setattr(procs, "_owner", None)
    monkeypatch.setattr(procs, "_detached", False)
    procs.mark_children(tmp_path, detached=True)
    keeper = int(procs.owner().partition(":")[0])
    try:
        assert keeper != os.getpid() and procs.owner_alive(procs.owner())
        assert os.environ[procs.OWNER_ENV] == procs.owner()
        assert keeper not in {p.pid for p in cleanup.tagged()}  # it carries no owner itself
    finally:
        os.kill(keeper, 15)
        procs.mark_children(tmp_path)  # back to this process as the owner (then undone)


def test_a_dead_mount_on_the_way_up_does_not_stop_the_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lazy disk whose lazyfs died answers every stat with ENOTCONN: the search for a
    left-running record goes on above it (before, cleanup itself crashed on it)."""
    from sealcheck.infra.left_running import LEFT_RUNNING, left_running_root

    run = tmp_path / "run"
    mount = run / "work" / "store"
    mount.mkdir(parents=True)
    real = Path.is_file

    def is_file(self: Path) -> bool:
        if str(self).startswith(str(mount)):
            raise OSError(107, "Transport endpoint is not connected")
        return real(self)

    monkeypatch.setattr(Path, "is_file", is_file)
    assert left_running_root(mount) is None
    (run / LEFT_RUNNING).write_text("{}")
    assert left_running_root(mount) == run
