"""The history writer, the report and the cleanup of leftovers, on their own."""

from __future__ import annotations

import itertools
import json
import os
import shlex
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from sealcheck.core.nodes import Launch
from sealcheck.core.roles import BUILT_IN
from sealcheck.infra import cleanup, procs
from sealcheck.infra.local import LocalBackend
from sealcheck.nemeses.registry import marks as nemesis_marks
from sealcheck.report.report import render
from sealcheck.report.timeline import build_timeline
from sealcheck.rundir.history import History
from sealcheck.rundir.history_writer import HistoryWriter


def test_history_is_flushed_line_by_line_from_many_threads(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    h = HistoryWriter(path)

    def write(n: int) -> None:
        for i in range(200):
            h.append(
                f"w{n}", "ok", "write", {"key": f"k{i}", "value": "{}", "partition": n, "offset": i}
            )

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    h.append("nemesis", "info", "kill-pipeline", {"killed": 1})
    early = History.load(path)  # readable before close: every line is flushed
    assert early.lines == 801 and early.torn_tail == 0  # every index checked against its line
    times = early.acked.lazy().collect()["time"].to_list()
    assert all(a <= b for a, b in itertools.pairwise([*times, early.ops[0]["time"]]))
    h.close()
    loaded = History.load(path)
    assert loaded.acked.lazy().collect().height == 800
    assert [o["f"] for o in loaded.ops] == ["kill-sut"]  # an old name loads as its new one
    assert h.counts[("write", "ok")] == 800


def _stored_run(tmp_path: Path, valid: object) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    ops = [
        {
            "index": 0,
            "time": 1_000_000_000,
            "process": "supervisor",
            "type": "info",
            "f": "sut-start",
            "value": {"incarnation": 0, "pid": 1},
        },
        {
            "index": 1,
            "time": 2_000_000_000,
            "process": "w0",
            "type": "ok",
            "f": "write",
            "value": {"key": "a", "value": "{}", "partition": 0, "offset": 0},
        },
        {
            "index": 2,
            "time": 3_000_000_000,
            "process": "nemesis",
            "type": "invoke",
            "f": "pause-pipeline",
            "value": {},
        },
        {
            "index": 3,
            "time": 4_000_000_000,
            "process": "observer",
            "type": "info",
            "f": "uppers",
            "value": {"data": 1, "bindings": 1, "errors": 1},
        },
        {
            "index": 4,
            "time": 5_000_000_000,
            "process": "nemesis",
            "type": "invoke",
            "f": "resume-pipeline",
            "value": {},
        },
    ]
    (run / "history.jsonl").write_text("".join(json.dumps(o) + "\n" for o in ops))
    (run / "test.json").write_text(
        json.dumps({"config": {"name": "t", "seed": 4}, "reproduce": ["sealcheck run --seed 4"]})
    )
    anomaly = {
        "kind": "diff-not-0-or-1",
        "collection": "data",
        "key": "k<1>",
        "step": 3,
        "expected": "0 or 1",
        "found": 2,
        "detail": "added twice",
        "context": {},
    }
    (run / "results.json").write_text(
        json.dumps(
            {
                "valid": valid,
                "checkers": {
                    "diff_of_one": {
                        "valid": valid,
                        "anomalies": [anomaly] if valid is False else [],
                        "anomaly_counts": {},
                        "counts": {},
                    }
                },
            }
        )
    )
    return run


def test_report_puts_the_verdict_first_and_escapes_values(tmp_path: Path) -> None:
    page = render(_stored_run(tmp_path, False))
    assert page.index("INVALID") < page.index("Reproduce") < page.index("Anomalies")
    assert "k&lt;1&gt;" in page and "sealcheck run --seed 4" in page
    assert "<script" not in page and "http://" not in page.replace("http://www.w3.org", "")


def test_timeline_pairs_faults_and_marks_restarts(tmp_path: Path) -> None:
    tl = build_timeline(
        History.load(_stored_run(tmp_path, True) / "history.jsonl"), nemesis_marks(BUILT_IN)
    )
    assert tl.intervals == [(3.0, 5.0, "sut frozen")]
    assert tl.restarts == [(1.0, "incarnation 0")]
    assert tl.uppers["data"] == [(4.0, 1)]
    assert tl.rate == [(0.0, 0), (1.0, 0), (2.0, 1)]


def test_cleanup_kills_processes_whose_harness_is_gone(tmp_path: Path) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    archive = tmp_path / "runs"
    run = archive / "t" / "1"  # a run directory of the archive: <test>/<time>, with test.json
    run.mkdir(parents=True)
    (run / "test.json").write_text("{}")
    env = {**os.environ, procs.RUN_ENV: str(run), procs.OWNER_ENV: f"{dead.pid}:0"}
    orphan = subprocess.Popen(["sleep", "60"], env=env, start_new_session=True)
    mine = subprocess.Popen(
        ["sleep", "60"],
        env={**env, procs.OWNER_ENV: procs.owner_token()},
        start_new_session=True,
    )
    try:
        # An older harness starting elsewhere on this machine may clean the orphan up first
        # (it took every archive's leftovers): then it is already dead of SIGKILL.
        found = {p.pid for p in cleanup.leftovers(archive)}
        elsewhere = orphan.poll() == -9
        assert orphan.pid in found or elsewhere
        gone = {p.pid for p in cleanup.cleanup(archive)}
        assert (orphan.pid in gone or elsewhere) and mine.pid not in gone
        deadline = time.monotonic() + 5
        while orphan.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert orphan.returncode == -9
        assert mine.poll() is None  # a live harness's processes are left alone
    finally:
        for p in (orphan, mine):
            p.kill()
            p.wait()


def test_serve_lists_runs_coloured_by_verdict(tmp_path: Path) -> None:
    import urllib.request

    from sealcheck.report.serve import make_server

    store = tmp_path / "store"
    for name, valid in (("good", True), ("bad", False)):
        run = store / name / "20260101T000000"
        run.mkdir(parents=True)
        doc = {"valid": valid, "checkers": {"completeness": {"valid": valid}}}
        (run / "results.json").write_text(json.dumps(doc))
        (run / "report.html").write_text(f"<html>{name}</html>")
    server = make_server(store, 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        index = urllib.request.urlopen(base + "/").read().decode()
        assert "VALID" in index and "INVALID" in index and "#cf222e" in index
        assert "/good/20260101T000000/report.html" in index
        page = urllib.request.urlopen(base + "/bad/20260101T000000/report.html").read()
        assert page == b"<html>bad</html>"
    finally:
        server.shutdown()
        server.server_close()


def test_local_processes_keep_sparks_scratch_in_the_runs_work_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A JVM killed with SIGKILL never deletes its ``blockmgr-*``/``spark-*`` directories: each
    local process gets ``SPARK_LOCAL_DIRS`` and a JVM temporary directory
    (``SPARK_SUBMIT_OPTS``) under ``work/`` (which the run removes), unless its launch or the
    harness's own environment sets the variable."""
    monkeypatch.delenv("SPARK_LOCAL_DIRS", raising=False)
    monkeypatch.delenv("SPARK_SUBMIT_OPTS", raising=False)
    backend = LocalBackend(1, tmp_path / "work")
    plain = Launch(program=("true",), args=())
    own = Launch(program=("true",), args=(), local_env={"SPARK_LOCAL_DIRS": "/elsewhere"})
    service = backend.service(plain, "spark", tmp_path / "s.log")
    incarnation = backend.incarnation(plain, "sut-0", tmp_path / "i.log", tmp_path / "fp")
    scratch = tmp_path / "work" / "spark-local"
    assert service.cwd == scratch / "spark" and service.cwd.is_dir()  # not the user's directory
    assert service.env["SPARK_LOCAL_DIRS"] == str(scratch / "spark")
    assert service.env["SPARK_SUBMIT_OPTS"] == f"-Djava.io.tmpdir={scratch / 'spark'}"
    assert incarnation.env["SPARK_LOCAL_DIRS"] == str(scratch / "sut-0")
    assert incarnation.env["SPARK_SUBMIT_OPTS"] == f"-Djava.io.tmpdir={scratch / 'sut-0'}"
    assert Path(incarnation.env["SPARK_LOCAL_DIRS"]).is_dir()
    assert backend.service(own, "x", tmp_path / "x.log").env["SPARK_LOCAL_DIRS"] == "/elsewhere"
    monkeypatch.setenv("SPARK_LOCAL_DIRS", "/users/choice")
    monkeypatch.setenv("SPARK_SUBMIT_OPTS", "-Dusers.choice=1")
    chosen = backend.service(plain, "y", tmp_path / "y.log").env
    assert "SPARK_LOCAL_DIRS" not in chosen and "SPARK_SUBMIT_OPTS" not in chosen
    monkeypatch.delenv("SPARK_SUBMIT_OPTS")  # each variable on its own
    alone = backend.service(plain, "z", tmp_path / "z.log").env
    assert "SPARK_LOCAL_DIRS" not in alone
    assert alone["SPARK_SUBMIT_OPTS"] == f"-Djava.io.tmpdir={scratch / 'z'}"
    assert (scratch / "z").is_dir()
    theirs = Launch(program=("true",), args=(), env={"SPARK_SUBMIT_OPTS": "-Dtheirs=1"})
    assert backend.service(theirs, "t", tmp_path / "t.log").env["SPARK_SUBMIT_OPTS"] == "-Dtheirs=1"


def test_an_incarnation_in_a_directory_of_its_own_finds_its_failpoint_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A launch may name the directory its process starts in (a job's directory, the
    pipeline's ``work/``); with a relative ``--runs`` the failpoint file's path is relative
    to the harness's: the process is handed it absolute, or a failpoint would never fire."""
    monkeypatch.chdir(tmp_path)
    fp = Path("runs/t/work/fp/failpoints")
    fp.parent.mkdir(parents=True)
    fp.write_text("data.before_append=crash")
    elsewhere = tmp_path / "runs" / "t" / "work" / "job"
    elsewhere.mkdir()
    show = Launch(("sh", "-c", 'cat "$SEALCHECK_FAILPOINTS_FILE"'), (), workdir=str(elsewhere))
    proc = LocalBackend(1, Path("runs/t/work")).incarnation(show, "sut-0", tmp_path / "l", fp)
    proc.start()
    assert proc.wait_exit() == 0 and proc.cwd == elsewhere
    assert proc.log_text().strip() == "data.before_append=crash"


def test_the_jvms_temporary_directory_is_one_absolute_argument(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Spark's launcher splits ``SPARK_SUBMIT_OPTS`` as a shell would: a work directory with a
    space or a quote in its path stays one ``-Djava.io.tmpdir`` argument; and a relative work
    directory is made absolute (a job's processes start in a directory of their own)."""
    monkeypatch.delenv("SPARK_LOCAL_DIRS", raising=False)
    monkeypatch.delenv("SPARK_SUBMIT_OPTS", raising=False)
    odd = tmp_path / "my runs" / "it's"
    env = LocalBackend(1, odd / "work").service(Launch(("true",), ()), "sut-0", tmp_path / "l").env
    expected = odd / "work" / "spark-local" / "sut-0"
    assert shlex.split(env["SPARK_SUBMIT_OPTS"]) == [f"-Djava.io.tmpdir={expected}"]
    assert env["SPARK_LOCAL_DIRS"] == str(expected) and expected.is_dir()
    monkeypatch.chdir(tmp_path)
    relative = LocalBackend(1, Path("work")).service(Launch(("true",), ()), "s", tmp_path / "l")
    assert relative.env["SPARK_LOCAL_DIRS"] == str(tmp_path / "work" / "spark-local" / "s")
    # Spark splits its local directories at commas: a path with one gets Spark's defaults
    comma = LocalBackend(1, tmp_path / "a,b" / "work").service(Launch(("true",), ()), "s", tmp_path)
    assert "SPARK_LOCAL_DIRS" not in comma.env and "SPARK_SUBMIT_OPTS" not in comma.env
    assert comma.cwd == tmp_path / "a,b" / "work" / "spark-local" / "s" and comma.cwd.is_dir()


def test_the_report_draws_faults_from_the_marks_the_run_kept(tmp_path: Path) -> None:
    """The report builds no nemesis: a run's faults are drawn as its test.json's marks say;
    a run stored before marks were kept gets them from the harness (``marks_of``)."""
    from sealcheck.harness.run.runner import marks_of
    from sealcheck.rundir.marks import MARKS, marks_to_json

    run = _stored_run(tmp_path, True)
    assert "sut frozen" not in render(run)  # no marks kept, none given: no fault drawn
    assert "sut frozen" in render(run, marks_of(run))  # the harness's, from the built-in roles
    meta = json.loads((run / "test.json").read_text())
    meta[MARKS] = marks_to_json(nemesis_marks(BUILT_IN))
    (run / "test.json").write_text(json.dumps(meta))
    assert "sut frozen" in render(run)
