import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from sealcheck_upsert_source import failpoints
from sealcheck_upsert_source.failpoints import FailpointError, FailpointSpecError, parse


def test_parse_actions_and_hits() -> None:
    armed = parse("data.mid_append=crash@3; compact.mid=sleep(25);rehydrate.mid=error")
    assert (armed["data.mid_append"].action, armed["data.mid_append"].hit) == ("crash", 3)
    assert (armed["compact.mid"].action, armed["compact.mid"].sleep_ms) == ("sleep", 25)
    assert armed["rehydrate.mid"].hit == 1


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ("nope=crash", "unknown failpoint 'nope'"),
        ("data.mid_append=explode", "is not name=action"),
        ("data.mid_append=crash@0", "at least 1"),
    ],
)
def test_bad_specs_name_the_entry(spec: str, fragment: str) -> None:
    with pytest.raises(FailpointSpecError, match=fragment):
        parse(spec)


def test_fires_once_on_the_configured_pass() -> None:
    failpoints.arm("compact.mid=error@2")
    try:
        failpoints.failpoint("compact.mid")
        with pytest.raises(FailpointError, match="pass 2"):
            failpoints.failpoint("compact.mid")
        failpoints.failpoint("compact.mid")  # fired already
        failpoints.failpoint("data.mid_append")  # not armed
    finally:
        failpoints.arm("")


def test_a_failpoint_file_arms_a_running_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec_file = tmp_path / "fp"
    monkeypatch.setenv(failpoints.FILE_ENV_VAR, str(spec_file))
    monkeypatch.delenv(failpoints.ENV_VAR, raising=False)
    try:
        failpoints.load_from_env()
        failpoints.failpoint("data.before_append")  # no file: nothing armed
        spec_file.write_text("data.before_append=error@1")
        with pytest.raises(FailpointError):
            failpoints.failpoint("data.before_append")
        assert not spec_file.exists()  # what fired from the file consumed it
        failpoints.failpoint("data.before_append")  # disarmed with the file gone
        spec_file.write_text("data.after_commit=error@1")
        spec_file.unlink()  # the harness disarmed it before it fired
        failpoints.failpoint("data.after_commit")
    finally:
        failpoints.arm("")


def test_a_crash_armed_from_the_file_consumes_it(tmp_path: Path) -> None:
    spec_file = tmp_path / "fp"
    spec_file.write_text("rehydrate.mid=crash")
    env = {**os.environ, failpoints.FILE_ENV_VAR: str(spec_file)}
    code = "from sealcheck_upsert_source.failpoints import failpoint; failpoint('rehydrate.mid')"
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert proc.returncode == -signal.SIGKILL
    assert '{"action": "crash", "event": "failpoint", "name": "rehydrate.mid"' in proc.stdout
    assert not spec_file.exists()  # the next incarnation starts clean
