"""The run's printed lines: stamped on the run's own clock once it has one (the report's time
base, not each phase's), the running incarnation named as the history and the report name it."""

from __future__ import annotations

import io

from rich.console import Console

from sealcheck.harness.run.progress import Display


def _display() -> tuple[Display, io.StringIO]:
    out = io.StringIO()
    return Display(console=Console(file=out, width=200), live=False), out


def test_lines_take_the_runs_clock_and_name_the_running_incarnation() -> None:
    display, out = _display()
    display.log("starting")  # before the run has a clock: the phase's elapsed time
    display.clock = lambda: 48.25
    display.update(phase="workload and faults", elapsed_s=24.0, incarnation=3)
    display.log("kill: kill-sut")
    lines = out.getvalue().splitlines()
    assert lines[0] == "[    0.0s] starting"
    assert lines[1] == (
        "[   48.2s] workload and faults (24 s in): writes acknowledged 0, uncertain 0, failed 0; "
        "sealed (uppers) {}; running sut-2"
    )
    assert lines[2] == "[   48.2s] kill: kill-sut"


def test_before_any_incarnation_none_is_named() -> None:
    display, _ = _display()
    assert display.status.newest == "none yet"
