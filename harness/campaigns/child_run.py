"""One chaos run as a child process: ``sealcheck run`` (a crash of the run or of its JVMs never
takes the caller with it; Ctrl-C reaches both), into a directory of its own, read back as a
:class:`~sealcheck.harness.campaigns.verdicts.ChaosResult`. The pytest plugin and ``sealcheck
suite`` run tests
this way."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sealcheck.harness.campaigns.verdicts import ChaosResult, read_result
from sealcheck.harness.run.config import ConfigError, TestConfig
from sealcheck.harness.run.flags import to_flags
from sealcheck.harness.run.shared_kafka import SHARED_KAFKA
from sealcheck.infra.sweep import sweep

__all__ = ["ALIASES", "ConfigError", "child_env", "command", "config_for", "run_chaos"]

#: short names callers may use for settings (``sealcheck(duration=15)``, a suite's
#: ``duration = 30``) -> the config's names; any other name is a config name as it stands
ALIASES = {
    "duration": "duration_s",
    "interval": "nemesis_interval_s",
    "rate": "workload.rate",
    "keys": "workload.keys",
}


def config_for(
    runs: Path,
    name: str,
    seed: int,
    nemeses: Sequence[str] | None,
    options: Mapping[str, Any],
) -> TestConfig:
    """The checked config of one run (``options``: settings by config name or alias, and
    ``config``: a TOML file under them). Bad settings raise :class:`ConfigError` here, in the
    caller, before anything starts."""
    opts = {k: v for k, v in options.items() if v is not None}
    path = opts.pop("config", None)
    raw = {ALIASES.get(k, k): v for k, v in opts.items()}
    raw.update(name=name, seed=seed, runs_dir=str(runs))
    if nemeses:
        raw["nemeses"] = list(nemeses)
    from sealcheck.harness.run.test import load_test  # (the plugin loads this module)

    return load_test(Path(path) if path else None, raw).spec  # built and validated once


def command(cfg: TestConfig) -> list[str]:
    """The ``sealcheck run`` command line of ``cfg``: every setting spelled out, as in a run's
    ``reproduce`` line (:func:`sealcheck.harness.run.flags.to_flags`)."""
    return [sys.executable, "-m", "sealcheck", "run", "--no-progress", *to_flags(cfg)]


def child_env() -> dict[str, str]:
    """This process's environment, with the folders it imports from that are not part of its
    Python installation (a test suite's folder, a project's source folder) on ``PYTHONPATH``,
    so the run's process finds a ``package.module:Factory`` system where the caller did."""
    env = dict(os.environ)
    installed = {Path(p).resolve() for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    own = []
    for entry in sys.path:
        path = Path(entry or ".").resolve()
        if path.is_dir() and not any(path.is_relative_to(i) for i in installed):
            own.append(str(path))
    given = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    if own:
        env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys([*given, *own]))
    return env


def torn_down(proc: subprocess.Popen[str], runs: Path, sig: int = signal.SIGTERM) -> str:
    """Stop the child run ``proc`` with ``sig`` (it tears down on Ctrl-C and on SIGTERM,
    leaving nothing) and wait for it; killed after 120 s, what its children left in the
    archive ``runs`` is swept (only this archive's runs': not another's). Its output."""
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(sig)
    try:
        output, _ = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        output, _ = proc.communicate()
        sweep(runs)
    return output or ""


def run_chaos(
    runs: Path,
    name: str,
    seed: int,
    nemeses: Sequence[str] | None,
    options: Mapping[str, Any],
    timeout_s: float,
    kafka: str = "",
) -> ChaosResult:
    """Run one chaos test into the archive ``runs`` (``runs/<name>/``) and read its verdict
    back. Bad settings raise :class:`ConfigError` before anything starts; a time-out gives
    UNKNOWN. ``kafka``: a running broker offered to the run
    (:mod:`sealcheck.harness.run.shared_kafka`), which it borrows if none of its faults acts
    on brokers."""
    argv = command(config_for(runs, name, seed, nemeses, options))
    runs.mkdir(parents=True, exist_ok=True)

    def run_dir() -> Path:
        """The newest run of this test (``runs/latest`` is shared by every test)."""
        mine = sorted((runs / name).glob("*/test.json"))
        return mine[-1].parent if mine else runs / name

    env = child_env()
    if kafka:
        env[SHARED_KAFKA] = kafka
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
    )
    try:
        output, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        output = torn_down(proc, runs, signal.SIGINT)
        return ChaosResult(
            "UNKNOWN",
            run_dir(),
            seed,
            proc.returncode,
            problems=(f"the run took longer than {timeout_s:.0f}s and was stopped",),
            output=output,
        )
    except BaseException:  # Ctrl-C or SIGTERM here: the run tears down before we go
        torn_down(proc, runs)
        raise
    if proc.returncode == 254:  # bad settings: nothing ran
        raise ValueError(f"sealcheck run refused the settings: {output.strip()}")
    return read_result(run_dir(), seed, proc.returncode, output)
