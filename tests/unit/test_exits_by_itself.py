"""A job that exits by itself (:mod:`sealcheck.harness.run.exits`): which exits the harness
explains, the job's own error found in its log, the restart's back-off, the give-up rule and
the halt it sets, with fake incarnations — and the fault phase ending at a halt."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from sealcheck.harness.run.exits import (
    ExitStreak,
    FaultSpans,
    by_itself,
    exit_fields,
    exit_line,
    give_up_reason,
)
from sealcheck.harness.run.faults import FaultPhase
from sealcheck.harness.run.halt import RunHalt
from sealcheck.harness.run.job_error import MAX_ERROR_CHARS, TAIL_CHARS, job_error, recorded_tail
from sealcheck.harness.run.supervisor import FailpointFile, Supervisor
from sealcheck.nemeses import Action
from sealcheck.rundir.history import History
from sealcheck.rundir.history_writer import HistoryWriter
from tests.incarnations import FakeIncarnation

PYTHON = """\
starting
Traceback (most recent call last):
  File "/job/main.py", line 12, in <module>
    main()
    ~~~~^^
  File "/job/main.py", line 9, in main
    raise ValueError("batch 3 holds two records of key k7")
ValueError: batch 3 holds two records of key k7
24/11/29 08:00:01 INFO SparkContext: Invoking stop() from shutdown hook
24/11/29 08:00:01 INFO ShutdownHookManager: Deleting directory /tmp/spark-1
"""

_MERGE = (
    "pyspark.errors.exceptions.captured.AnalysisException: "
    "[DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE] Cannot perform Merge as multiple "
    "source rows matched and attempted to modify the same"
)
PYSPARK = f"""\
Traceback (most recent call last):
  File "/job/job.py", line 40, in upsert
    target.merge(batch, "t.id = s.id").whenMatchedUpdateAll().execute()
  File "/venv/pyspark/errors/exceptions/captured.py", line 185, in deco
    raise converted from None
{_MERGE}
target row in the Delta table in possibly conflicting ways.
24/11/29 08:00:02 INFO SparkUI: Stopped Spark web UI
"""

JAVA = """\
24/11/29 08:00:00 INFO Main: starting
Exception in thread "main" org.apache.spark.SparkException: Job aborted.
\tat org.apache.spark.sql.execution.datasources.FileFormatWriter$.write(FileFormatWriter.scala:231)
\tat org.example.Job.main(Job.java:20)
Caused by: java.io.IOException: No space left on device
\tat java.io.FileOutputStream.writeBytes(Native Method)
24/11/29 08:00:03 INFO ShutdownHookManager: Shutdown hook called
"""


def test_the_error_of_a_python_traceback_is_its_exception_not_the_last_line() -> None:
    assert job_error(PYTHON) == "ValueError: batch 3 holds two records of key k7"


def test_a_pyspark_analysis_exception_keeps_its_error_class() -> None:
    error = job_error(PYSPARK)
    assert error is not None
    assert error.startswith("pyspark.errors.exceptions.captured.AnalysisException: ")
    assert "[DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE]" in error
    assert len(error) <= MAX_ERROR_CHARS


def test_a_java_stack_trace_gives_its_root_cause() -> None:
    assert job_error(JAVA) == "Caused by: java.io.IOException: No space left on device"


def test_a_spark_error_class_or_an_event_names_the_error_without_a_trace() -> None:
    log = "INFO x\n[STREAM_FAILED] Query q terminated with exception: boom\nINFO bye\n"
    assert job_error(log) == "[STREAM_FAILED] Query q terminated with exception: boom"
    event = '{"event": "crashed", "error": "OSError: disk gone"}\nbye\n'
    assert job_error(event) == "crashed: OSError: disk gone"


def test_an_empty_log_printed_nothing_and_anything_else_is_its_last_line() -> None:
    assert job_error("") is None and job_error("\n  \n") is None
    assert job_error("connecting\nno input given, nothing to do\n\n") == (
        "no input given, nothing to do"
    )
    assert job_error("x" * 1000) == "x" * (MAX_ERROR_CHARS - 1) + "…"


def test_the_log_tail_is_the_last_lines_capped() -> None:
    log = "".join(f"line {i}\n" for i in range(100))
    tail = recorded_tail(log)
    assert tail.splitlines()[0] == "line 80" and tail.endswith("line 99")
    long = recorded_tail("y" * 10_000)
    assert len(long) == TAIL_CHARS and long.startswith("…")


def test_what_the_harness_did_explains_an_exit_and_nothing_else_does() -> None:
    plain: dict[str, Any] = {"zombie": False, "stopping": False}
    assert by_itself(0, {}, **plain)  # the command returned
    assert by_itself(1, {"last_event": "crashed"}, **plain)
    assert by_itself(-6, {"signal": "SIGABRT"}, **plain)  # a JVM that aborted: its own
    assert not by_itself(-9, {"signal": "SIGKILL"}, **plain)  # a kill, a crash point
    assert not by_itself(-15, {"signal": "SIGTERM"}, **plain)
    fired = {"fired": {"failpoint": "after_merge", "action": "error"}}
    assert not by_itself(1, fired, **plain)
    assert not by_itself(3, {}, zombie=True, stopping=False)
    assert not by_itself(0, {}, zombie=False, stopping=True)
    assert not by_itself(4, {}, **plain, refusal_codes=frozenset({4}))  # the final phase's


def test_each_exit_by_itself_doubles_the_delay_and_progress_or_a_kill_starts_over() -> None:
    streak = ExitStreak(base_s=0.5, cap_s=10.0)
    delays = []
    for _ in range(7):
        streak.alone({"code": 0}, progress=0)
        delays.append(streak.delay_s())
    assert delays == [0.5, 1.0, 2.0, 4.0, 8.0, 10.0, 10.0]
    streak.explained(progress=0)  # a kill: as fast as before
    assert streak.delay_s() == 0.5 and streak.exits == []
    streak.alone({}, 0)
    streak.alone({}, 0)
    streak.alone({}, 5)  # the output advanced in between
    assert len(streak.exits) == 1 and streak.delay_s() == 0.5


def test_three_exits_in_a_row_without_progress_give_up() -> None:
    streak = ExitStreak()
    for _ in range(2):
        streak.alone({}, 0)
    assert not streak.exhausted(0)
    streak.alone({}, 0)
    assert not streak.exhausted(1)  # progress seen after the last exit: start over
    assert streak.exits == []
    for _ in range(3):
        streak.alone({}, 1)
    assert streak.exhausted(1)


def test_the_lines_say_what_happened_and_the_give_up_line_names_the_error() -> None:
    quick = {"incarnation": 4, "code": 0, **exit_fields(0.04, "", during_faults=False)}
    assert quick["error"] is None and quick["log_tail"] == ""
    assert exit_line(quick) == (
        "sut-4 exited by itself after 0.04 s (code 0), no fault explains it: it printed nothing"
    )
    during = {"incarnation": 5, "code": 1, **exit_fields(3.0, PYTHON, during_faults=True)}
    assert "while faults were injected: ValueError: batch 3" in exit_line(during)
    streak = [{**quick, "incarnation": n} for n in (2, 3, 4)]
    assert give_up_reason(streak) == (
        "the job's command exits at once by itself: 3 incarnations in a row (sut-2 to sut-4) "
        "exited within 0.0 s of starting (code 0), nothing sealed: it printed nothing "
        "(its log: logs/sut-4.log)"
    )
    slow = [{**during, "incarnation": n, "lived_s": 40.0} for n in (7, 8, 9)]
    line = give_up_reason(slow)
    assert line.startswith("the job exits by itself without progress: 3 incarnations")
    assert line.endswith(
        ": ValueError: batch 3 holds two records of key k7 (its log: logs/sut-9.log)"
    )


def test_the_fault_phase_spans_tell_which_lives_overlapped_it() -> None:
    spans = FaultSpans()
    assert not spans.overlap(0.0, time.monotonic())
    spans.mark(True)
    start = time.monotonic()
    assert spans.overlap(start - 10, start - 0.0)  # lived into it
    spans.mark(False)
    end = time.monotonic()
    assert spans.overlap(end - 0.001, end + 5)  # started before it ended
    assert not spans.overlap(end + 1, end + 2)  # started after healing


class _Exiting(FakeIncarnation):
    """Exits at once with ``code`` (after logging ``lines``), like a command such as true."""

    def __init__(self, n: int, code: int, lines: tuple[str, ...] = ()) -> None:
        super().__init__(n)
        self.log(*lines)
        self.finish(code)


def _supervise(
    tmp_path: Path, make: Any, progress: Any = lambda: 0
) -> tuple[Supervisor, RunHalt, HistoryWriter, list[str]]:
    history = HistoryWriter(tmp_path / "history.jsonl")
    said: list[str] = []
    halt = RunHalt(history, said.append)
    fp = FailpointFile(tmp_path / "fp")
    sup = Supervisor(
        make, history, fp, lambda _: None, 0.01, 0.01, halt=halt, say=said.append, progress=progress
    )
    return sup, halt, history, said


def _ops(tmp_path: Path, history: HistoryWriter) -> list[dict[str, Any]]:
    history.close()
    return History.load(tmp_path / "history.jsonl").ops


def test_a_command_that_exits_at_once_halts_the_run_after_three(tmp_path: Path) -> None:
    made: list[int] = []

    def make(n: int) -> _Exiting:
        made.append(n)
        return _Exiting(n, 0)

    sup, halt, history, said = _supervise(tmp_path, make)
    sup.start()
    assert halt.wait(10), said
    sup.stop(1)
    assert made == [0, 1, 2]  # no fourth start once it gave up
    ops = _ops(tmp_path, history)
    exits = [o["value"] for o in ops if o["f"] == "sut-exit"]
    assert [e["by_itself"] for e in exits] == [True] * 3
    assert all(e["error"] is None and e["code"] == 0 for e in exits)
    [halted] = [o["value"] for o in ops if o["f"] == "halted"]
    assert halted["incarnation"] == 2 and halted["by"] == "supervisor"
    assert halted["reason"].startswith("the job's command exits at once by itself")
    assert said[:3] == [exit_line(e) for e in exits]  # each as it happened, then the halt
    assert said[3] == f"halted: {halted['reason']}" and len(said) == 4


def test_a_job_that_fails_on_its_own_is_halted_with_its_error(tmp_path: Path) -> None:
    trace = tuple(PYTHON.splitlines(keepends=True))
    sup, halt, history, _ = _supervise(tmp_path, lambda n: _Exiting(n, 1, trace))
    sup.start()
    assert halt.wait(10)
    sup.stop(1)
    assert halt.reason is not None
    assert halt.reason.endswith(
        "ValueError: batch 3 holds two records of key k7 (its log: logs/sut-2.log)"
    )
    exits = [o["value"] for o in _ops(tmp_path, history) if o["f"] == "sut-exit"]
    assert exits[-1]["log_tail"].endswith("Deleting directory /tmp/spark-1")


def _run_until(sup: Supervisor, made: list[int], n: int, timeout_s: float = 10) -> None:
    """Start ``sup``, let it make ``n`` incarnations (or give up after ``timeout_s``), stop it."""
    sup.start()
    deadline = time.monotonic() + timeout_s
    while len(made) < n and time.monotonic() < deadline:
        time.sleep(0.01)
    sup.stop(1)


def test_progress_between_exits_or_kills_never_give_up(tmp_path: Path) -> None:
    made: list[int] = []
    advances = iter(range(1000))

    def make(n: int) -> _Exiting:
        made.append(n)
        return _Exiting(n, 0 if n % 2 else -9)  # every other one killed by the harness

    sup, halt, history, _ = _supervise(tmp_path, make)
    _run_until(sup, made, 8)
    assert len(made) >= 8 and not halt.is_set()

    made.clear()
    (tmp_path / "b").mkdir()
    sup, halt, second, _ = _supervise(
        tmp_path / "b", lambda n: made.append(n) or _Exiting(n, 0), lambda: next(advances)
    )
    _run_until(sup, made, 6)
    assert len(made) >= 6 and not halt.is_set()  # the output advanced every time
    history.close()
    second.close()


def test_exits_during_the_fault_phase_are_said_but_never_give_up(tmp_path: Path) -> None:
    made: list[int] = []
    sup, halt, history, said = _supervise(tmp_path, lambda n: made.append(n) or _Exiting(n, 1))
    sup.faults.mark(True)
    _run_until(sup, made, 6)
    assert len(made) >= 6 and not halt.is_set()
    assert "while faults were injected" in said[0]
    exits = [o["value"] for o in _ops(tmp_path, history) if o["f"] == "sut-exit"]
    alone = [e for e in exits if e.get("by_itself")]  # not the one the stop may have ended
    assert len(alone) >= 5 and all(e["during_faults"] for e in alone)


class _History:
    def __init__(self) -> None:
        self.ops: list[tuple[str, str, str, Any]] = []

    def append(self, process: str, type_: str, f: str, value: Any = None) -> None:
        self.ops.append((process, type_, f, value))


class _Nemesis:
    def invoke(self, action: Action, target: Any) -> dict[str, Any]:
        return {"outcome": "pending"} if action.f == "arm" else {}

    def resolve(self, action: Action, target: Any, waited_s: float) -> dict[str, Any]:
        return {"outcome": "happened", "fired": True}


def test_a_halt_ends_the_fault_phase_settling_what_is_pending(tmp_path: Path) -> None:
    history, lines = _History(), []
    halt = RunHalt(history, lines.append)  # type: ignore[arg-type]
    schedule = [Action(0.0, "n", "arm"), Action(30.0, "n", "kill"), Action(50.0, "n", "kill")]
    display = _Display(lines)
    phase = FaultPhase(schedule, {"n": _Nemesis()}, object(), 60.0, history, display, halt=halt)  # type: ignore[arg-type]
    threading.Timer(0.3, halt.set, ("the job's command exits at once",)).start()
    began = time.monotonic()
    phase.run()
    assert time.monotonic() - began < 30  # not the 60 s planned (a generous bound)
    outcomes = {v["action"]: v for p, t, f, v in history.ops if f == "outcome"}
    assert outcomes[0]["outcome"] == "happened"  # the pending one, settled
    for i in (1, 2):
        assert outcomes[i] == {
            "action": i,
            "f": "kill",
            "outcome": "skipped",
            "why": "the run was halted: the job's command exits at once",
        }
    assert [f for p, t, f, v in history.ops].count("halted") == 1


class _Display:
    def __init__(self, lines: list[str]) -> None:
        self.lines = lines

    def log(self, line: str) -> None:
        self.lines.append(line)

    def update(self, **changes: Any) -> None:
        pass


def test_an_incarnation_stopped_for_an_upgrade_did_not_exit_by_itself(tmp_path: Path) -> None:
    # the upgrade nemesis's SIGTERM: the job finishes its batch and exits 0, as a job stopped
    # for a deployment does; that exit is the harness's doing, never the job's own
    from sealcheck.harness.run.supervisor import SupervisedNode

    sup, halt, history, said = _supervise(tmp_path, FakeIncarnation)
    sup.start()
    node = SupervisedNode(sup, wait_s=5)
    assert node.terminate(5) == (1000, 0)  # incarnation 0, which finished and exited 0
    deadline = time.monotonic() + 10
    while node.ident in (None, 1000) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert node.ident == 1001  # the next one runs
    sup.stop(1)
    exits = [o["value"] for o in _ops(tmp_path, history) if o["f"] == "sut-exit"]
    assert exits[0]["code"] == 0 and "by_itself" not in exits[0], exits[0]
    assert not said and halt.reason is None
