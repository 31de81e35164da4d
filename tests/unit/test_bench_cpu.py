"""The benches' CPU accounting (``bench/measure.py``): the arithmetic of a window, and a
snapshot that sees a child's CPU under its command name and the brokers apart."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from measure import CpuSnapshot, cpu_between, cpu_snapshot

#: Burns ``argv[1]`` seconds of its own CPU, says so, then waits to be killed.
_BURN = (
    "import sys, time\n"
    "while time.process_time() < float(sys.argv[1]): pass\n"
    "print('burnt', flush=True)\n"
    "time.sleep(600)\n"
)


def test_a_window_is_the_difference_split_by_name_and_per_records() -> None:
    a = CpuSnapshot(10.0, 100.0, {"java": 5.0, "brokers": 1.0})
    b = CpuSnapshot(14.0, 106.0, {"java": 8.0, "python": 2.0, "brokers": 1.0})
    got = cpu_between(a, b, 200_000)
    assert got["wall_s"] == 4.0
    assert got["busy_core_s"] == 6.0
    assert got["parts_core_s"] == {"java": 3.0, "python": 2.0}  # unchanged parts left out
    assert got["core_s_per_100k_records"] == 3.0
    assert got["utilisation"] == pytest.approx(6.0 / (4.0 * got["cores"]), abs=1e-3)


def test_a_snapshot_counts_a_childs_cpu_and_keeps_the_brokers_apart() -> None:
    procs = [
        subprocess.Popen([sys.executable, "-c", _BURN, "0.3"], stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    try:
        for p in procs:
            assert p.stdout is not None and p.stdout.readline().strip() == "burnt"
        broker = procs[1].pid  # stands in for a broker: counted apart, not in the tree
        snap = cpu_snapshot([broker])
        assert snap.parts["brokers"] >= 0.25  # /proc counts whole clock ticks
        tree = sum(v for k, v in snap.parts.items() if k != "brokers")
        assert 0.25 <= tree < snap.machine_s
    finally:
        for p in procs:
            p.kill()
            p.wait()
