"""The benches' CPU accounting (``bench/measure.py``): the arithmetic of a window, and
snapshots of real processes: each counted once, the brokers apart, one that exits kept."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from measure import CpuSnapshot, Proc, cpu_between, cpu_snapshot

#: Burns ``argv[1]`` seconds of its own CPU, says so, then waits for its stdin to close.
_BURN = (
    "import sys, time\n"
    "while time.process_time() < float(sys.argv[1]): pass\n"
    "print('burnt', flush=True)\n"
    "sys.stdin.read()\n"
)


#: the command name /proc gives the burners: the name this interpreter was started by
#: (``python`` under tox, ``python3`` from a virtualenv's pytest)
_COMM = Path(sys.executable).name[:15]


def _proc(comm: str, own: float, reaped: float = 0.0, start: int = 1) -> Proc:
    return Proc(1, comm, 0, own, reaped, start)


def test_a_window_splits_the_machine_and_keeps_what_exited() -> None:
    a = CpuSnapshot(
        10.0,
        100.0,
        _proc("python", 1.0),
        {(7, 1): _proc("java", 5.0), (8, 1): _proc("python", 2.0), (9, 1): _proc("sh", 0.5)},
        {(3, 1): _proc("java", 1.0)},
    )
    b = CpuSnapshot(
        14.0,
        110.0,
        _proc("python", 1.5, reaped=0.75),  # the harness waited for pid 9: 0.5 + 0.25 after a
        # pid 8 was reused by a new process: all of its time is in the window
        {(7, 1): _proc("java", 8.0), (8, 2): _proc("python", 0.25)},
        {(3, 1): _proc("java", 2.0)},
    )
    got = cpu_between(a, b, 200_000)
    assert got["wall_s"] == 4.0 and got["busy_core_s"] == 10.0
    assert got["parts_core_s"] == {
        "java": 3.0,
        "python": 0.25,
        "exited": -1.75,  # pid 8's 2.0 before the window went nowhere the tree can see
        "brokers": 1.0,
        "harness": 0.5,
        "other": 7.0,
    }
    assert got["core_s_per_100k_records"] == 5.0
    assert got["system_core_s_per_100k_records"] == 1.25  # (3.0 + 0.25 - 1.75 + 1.0) / 2


def _burner(seconds: float) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", _BURN, str(seconds)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "burnt"
    return proc


def _end(proc: subprocess.Popen[str]) -> None:
    if proc.stdin is not None:
        proc.stdin.close()
    proc.wait()


def test_each_process_once_and_the_brokers_apart() -> None:
    a = cpu_snapshot([])
    mine, broker = _burner(0.3), _burner(0.3)
    try:
        b = cpu_snapshot([broker.pid])
    finally:
        _end(mine)
        _end(broker)
    got = cpu_between(a, b, 100_000)["parts_core_s"]
    # /proc counts whole clock ticks; the broker not in it
    assert 0.25 <= got[_COMM] < 0.5
    assert 0.25 <= got["brokers"] < 0.5


def test_a_process_that_exits_in_the_window_is_kept() -> None:
    a = cpu_snapshot([])
    _end(_burner(0.3))  # started, burnt and waited for by this process between a and b
    got = cpu_between(a, cpu_snapshot([]), 100_000)["parts_core_s"]
    assert 0.25 <= got["exited"] < 0.5
    assert _COMM not in got or got[_COMM] < 0.1
