"""A campaign stopped by Ctrl-C or SIGTERM stops its child run the same way and waits for its
teardown (:func:`sealcheck.harness.campaigns.child_run.torn_down`): a child killed outright
leaves its lazy disk's mount and its processes for the next sweep (seen when a self-test was
sent SIGTERM); one that outlives the wait is killed and the archive swept."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from sealcheck.harness.campaigns.child_run import torn_down

CHILD = textwrap.dedent(
    """
    import signal, sys, time
    def stop(sig, frame):
        print("torn down", flush=True)
        sys.exit(143)
    signal.signal(signal.SIGTERM, stop)
    print("running", flush=True)
    time.sleep(60)
    """
)


def test_the_child_run_gets_sigterm_and_its_teardown_is_awaited(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "running"
    output = torn_down(proc, tmp_path / "runs")
    assert proc.returncode == 143 and "torn down" in output


def test_a_child_already_gone_is_no_error(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"], stdout=subprocess.PIPE, text=True)
    proc.wait(30)
    assert torn_down(proc, tmp_path / "runs") == "" and proc.returncode == 0
