"""``sealcheck_failpoint``: the dependency-free helper a user's job calls for exact crash
points — armed by the harness's failpoint file, silent without it, importing nothing of
Sealcheck."""

from __future__ import annotations

import ast
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import sealcheck_failpoint
from sealcheck.systems.api import crash_failpoint

HELPER = Path(sealcheck_failpoint.__file__)


def test_it_imports_only_the_standard_library() -> None:
    tree = ast.parse(HELPER.read_text())
    names = {
        a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names
    }
    names |= {
        n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module
    }
    assert names <= set(sys.stdlib_module_names) | {"__future__"}


def test_without_the_environment_variable_nothing_happens(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(sealcheck_failpoint.ENV_VAR, raising=False)
    points = sealcheck_failpoint.Failpoints()
    for _ in range(3):
        points.hit("after_merge")  # no file, no effect


def test_an_armed_point_fires_on_its_pass_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fp = tmp_path / "failpoints"
    fp.write_text("after_merge=error@2; other=sleep(1)")
    points = sealcheck_failpoint.Failpoints(str(fp))
    points.hit("after_merge")
    with pytest.raises(sealcheck_failpoint.FailpointError, match="after_merge fired"):
        points.hit("after_merge")
    assert not fp.exists()  # consumed: the next incarnation starts disarmed
    points.hit("after_merge")
    event = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert event == {"event": "failpoint", "name": "after_merge", "action": "error", "pass": 2}


def test_a_crash_is_sigkill_and_the_harness_reads_which_point_fired(tmp_path: Path) -> None:
    fp = tmp_path / "failpoints"
    fp.write_text("batch.after_commit=crash")
    code = "import sealcheck_failpoint as f; f.hit('start'); f.hit('batch.after_commit'); print(1)"
    env = {**os.environ, sealcheck_failpoint.ENV_VAR: str(fp)}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert proc.returncode == -signal.SIGKILL
    assert not proc.stdout.strip().endswith("1")
    assert crash_failpoint(proc.stdout) == "batch.after_commit"
    assert not fp.exists()


def test_a_malformed_entry_is_reported_and_ignored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fp = tmp_path / "failpoints"
    fp.write_text("after merge=explode")
    sealcheck_failpoint.Failpoints(str(fp)).hit("after merge")
    assert json.loads(capsys.readouterr().out)["event"] == "failpoint_ignored"
