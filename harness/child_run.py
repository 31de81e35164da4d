"""One chaos run as a child process: ``sealcheck run`` (a crash of the run or of its JVMs never
takes the caller with it; Ctrl-C reaches both), into a directory of its own, read back as a
:class:`~harness.verdicts.ChaosResult`. The pytest plugin and ``sealcheck suite`` run tests
this way."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.verdicts import ChaosResult, read_result

#: ``sealcheck run`` flags by keyword; anything else goes through ``--set name=value``
_FLAGS = {
    "system": "--system",
    "backend": "--backend",
    "broken": "--broken",
    "duration": "--duration",
    "interval": "--interval",
    "brokers": "--brokers",
    "rate": "--rate",
    "keys": "--keys",
    "config": "--config",
}


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return str(value)


def command(
    store: Path,
    name: str,
    seed: int,
    nemeses: Sequence[str] | None,
    options: Mapping[str, Any],
) -> list[str]:
    """The ``sealcheck run`` command line for one run."""
    argv = [sys.executable, "-m", "harness", "run", "--no-progress", "--store", str(store)]
    argv += ["--name", name, "--seed", str(seed)]
    if nemeses:
        argv += ["--nemesis", ",".join(nemeses)]
    for key, value in options.items():
        if value is None:
            continue
        if key in _FLAGS:
            argv += [_FLAGS[key], str(value)]
        else:
            argv += ["--set", f"{key}={_toml(value)}"]
    return argv


def run_chaos(
    store: Path,
    name: str,
    seed: int,
    nemeses: Sequence[str] | None,
    options: Mapping[str, Any],
    timeout_s: float,
) -> ChaosResult:
    """Run one chaos test into ``store/<name>/`` and read its verdict back. Bad settings come
    back as the harness's own one-line error (exit 254), a time-out as UNKNOWN."""
    store.mkdir(parents=True, exist_ok=True)
    argv = command(store, name, seed, nemeses, options)

    def run_dir() -> Path:
        """The newest run of this test (``store/latest`` is shared by every test)."""
        mine = sorted((store / name).glob("*/test.json"))
        return mine[-1].parent if mine else store / name

    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        output, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGINT)  # the harness tears down on Ctrl-C, leaving nothing
        try:
            output, _ = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()  # its leftovers are removed by the next run's cleanup
            output, _ = proc.communicate()
        return ChaosResult(
            "UNKNOWN",
            run_dir(),
            seed,
            proc.returncode,
            problems=(f"the run took longer than {timeout_s:.0f}s and was stopped",),
            output=output,
        )
    if proc.returncode == 254:  # bad settings: nothing ran
        raise ValueError(f"sealcheck run refused the settings: {output.strip()}")
    return read_result(run_dir(), seed, proc.returncode, output)
