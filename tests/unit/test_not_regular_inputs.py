"""Only a run directory's own regular files are read: a FIFO or a symlink to ``/dev/zero`` in
an input's place used to hang ``sealcheck check`` for ever (issue 48). Each is refused in one
line, before it is opened, and the verdict is UNKNOWN.

The checks run as ``sealcheck check`` in a child process with a generous deadline, so a
regression fails here instead of hanging the suite."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from sealcheck.checkers import check_run
from sealcheck.harness.cli import app as cli
from sealcheck.rundir.files import ACKS, TOPIC, UPDATES
from sealcheck.rundir.regular import not_regular
from tests.runs import stored_run

ROOT = Path(__file__).resolve().parents[2]
#: seconds: far beyond what a check of these small runs takes on a loaded machine
DEADLINE_S = 120


def check(run_dir: Path) -> tuple[int, str]:
    """``sealcheck check RUN_DIR`` in a child process: its exit code and what it printed."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "sealcheck", "check", str(run_dir)],
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,  # a hang fails the test (subprocess.TimeoutExpired)
        env=env,
        cwd=ROOT,
    )
    out = proc.stdout + proc.stderr
    assert "Traceback" not in out, out
    return proc.returncode, out


def problems(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("  input problem: ")]


FIFOS: list[Path] = []


def fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)
    FIFOS.append(path)


@pytest.fixture(autouse=True)
def no_fifo_left(tmp_path: Path) -> Iterator[None]:
    """Every FIFO made is removed after its test: a reader of a neighbouring test's folder
    (e.g. a listing of every run under the workers' temporary folder) would wait on it."""
    yield
    for path in FIFOS:
        path.unlink(missing_ok=True)
    FIFOS.clear()
    for path in tmp_path.rglob("*"):
        if path.is_fifo():
            path.unlink()


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    return stored_run(tmp_path, run_id="r")


def test_a_fifo_in_place_of_the_updates_is_refused_in_one_line(run_dir: Path) -> None:
    fifo(run_dir / UPDATES)
    code, out = check(run_dir)
    assert code == cli.EXIT_UNKNOWN, out
    [line] = problems(out)
    assert f"{run_dir / UPDATES} is a FIFO, not a regular file" in line, out


def test_a_symlink_to_dev_zero_in_place_of_the_topic_is_refused_in_one_line(
    run_dir: Path,
) -> None:
    (run_dir / TOPIC).unlink()
    (run_dir / TOPIC).symlink_to("/dev/zero")
    code, out = check(run_dir)
    assert code == cli.EXIT_UNKNOWN, out
    [line] = problems(out)
    assert f"{run_dir / TOPIC} is a symlink to /dev/zero, outside the run directory" in line


@pytest.mark.parametrize("ids", ["its own files", "an old run's files"])
def test_a_fifo_as_the_history_is_unknown_promptly(tmp_path: Path, ids: str) -> None:
    run_dir = stored_run(tmp_path, run_id="r" if ids == "its own files" else None)
    fifo(run_dir / "history.jsonl")
    code, out = check(run_dir)
    assert code == cli.EXIT_UNKNOWN, out
    said = f"{run_dir / 'history.jsonl'} is a FIFO, not a regular file"
    assert [p for p in problems(out) if said in p], out
    if ids == "its own files":  # judged without the history: its one problem
        assert len(problems(out)) == 1 and "sealed_state: valid" in out, out


def test_a_fifo_as_the_acknowledgements_or_test_json_is_refused(run_dir: Path) -> None:
    fifo(run_dir / ACKS)
    code, out = check(run_dir)
    assert code == cli.EXIT_UNKNOWN and f"{run_dir / ACKS} is a FIFO" in out, out
    (run_dir / "history.jsonl").unlink()  # now test.json says which run this is
    (run_dir / ACKS).unlink()
    fifo(run_dir / "test.json")
    code, out = check(run_dir)
    assert code == cli.EXIT_UNKNOWN, out
    assert f"{run_dir / 'test.json'} is a FIFO, not a regular file" in problems(out)[0], out


def test_a_symlink_within_the_run_is_read_and_one_out_of_it_is_not(
    run_dir: Path, tmp_path: Path
) -> None:
    topic, moved = run_dir / TOPIC, run_dir / "kept" / "topic.parquet"
    moved.parent.mkdir()
    shutil.move(topic, moved)
    topic.symlink_to(Path("kept") / "topic.parquet")
    assert not_regular(topic, run_dir) is None
    assert check_run(run_dir).valid is True  # the same bytes, proven by their digest
    outside = tmp_path / "elsewhere.parquet"
    shutil.copy(moved, outside)
    topic.unlink()
    topic.symlink_to(outside)  # the same bytes, but not the run's own file
    res = check_run(run_dir)
    assert res.valid is None and res.checkers == {}
    assert f"is a symlink to {outside}, outside the run directory" in res.input_problems[0]


def test_a_folder_linked_out_of_the_run_is_out_of_it(run_dir: Path, tmp_path: Path) -> None:
    moved = tmp_path / "export-elsewhere"
    shutil.move(run_dir / "export", moved)
    (run_dir / "export").symlink_to(moved)
    res = check_run(run_dir)
    assert res.valid is None and res.checkers == {}
    line = f"{run_dir / UPDATES} is reached through a symlink as {moved / 'updates.parquet'}"
    assert any(p.startswith(line) for p in res.input_problems), res.input_problems


def test_what_is_not_a_regular_file_is_named_by_its_kind(tmp_path: Path) -> None:
    (tmp_path / "dir").mkdir()
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "null").symlink_to("/dev/null")
    (tmp_path / "file").write_text("x")
    (tmp_path / "dangling").symlink_to(tmp_path / "gone")
    assert "is a directory, not a regular file" in str(not_regular(tmp_path / "dir", tmp_path))
    assert "is a FIFO, not a regular file" in str(not_regular(tmp_path / "fifo", tmp_path))
    assert "symlink to /dev/null, outside" in str(not_regular(tmp_path / "null", tmp_path))
    assert not_regular(tmp_path / "file", tmp_path) is None
    assert not_regular(tmp_path / "missing", tmp_path) is None  # the caller names it missing
    assert not_regular(tmp_path / "dangling", tmp_path) is None
    inner = tmp_path / "inner"
    inner.mkdir()
    (inner / "dev").symlink_to("/dev/zero")
    why = not_regular(inner / "dev", inner)
    assert why is not None and why.count("\n") == 0 and "re-run the test" in why
    assert json.dumps(why)  # one plain line
