"""The names a run writes now (issue 25): the supervisor's ``sut-start``/``sut-exit`` ops and
the system's events as ``sut-event`` ops (read from each incarnation's log while it runs), the
export in ``export/``, incarnations' logs as ``sut-N.log``, the archive of runs in ``runs/``
with one flag (``--store`` refused in one line), and the report's batches read from the
history, not from logs."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from sealcheck.harness.cli import app as cli
from sealcheck.harness.run.config import TestConfig
from sealcheck.harness.run.events import EventTail
from sealcheck.harness.run.supervisor import FailpointFile, Supervisor
from sealcheck.report.batches import NOT_RECORDED, batch_rows
from sealcheck.rundir import names
from sealcheck.rundir.files import Export, describe, write_export
from sealcheck.rundir.history import History
from sealcheck.rundir.history_writer import HistoryWriter
from tests.incarnations import FakeIncarnation


def _until(cond: object, timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond() and time.monotonic() < deadline:  # type: ignore[operator]
        time.sleep(0.01)
    assert cond(), "condition not reached"  # type: ignore[operator]


def _line(event: str, **fields: object) -> str:
    return json.dumps({"event": event, **fields}) + "\n"


def test_the_supervisor_writes_sut_ops_and_the_events_it_reads_while_the_incarnation_runs(
    tmp_path: Path,
) -> None:
    made: list[FakeIncarnation] = []

    def make(n: int) -> FakeIncarnation:
        made.append(FakeIncarnation(n, base=2000))
        return made[-1]

    history = HistoryWriter(tmp_path / "history.jsonl")
    fp = FailpointFile(tmp_path / "fp")
    sup = Supervisor(make, history, fp, lambda _: None, 0.0, event_poll_s=0.02)  # type: ignore[arg-type]
    sup.start()
    try:
        _until(lambda: sup.running() is not None)
        first = made[0]
        first.log(
            "Spark says hello\n", _line("started", seconds=1.5), _line("batch_start", batch=0)
        )
        first.log(_line("sealed", t=0), '{"event": "batch_start", "bat')  # a line half written
        _until(lambda: history.counts[(names.SUT_EVENT, "info")] == 2)  # read while it runs
        first.log('ch": 1}\n', _line("failpoint", name="data.after_commit", action="crash"))
        first.finish(-9)
        _until(lambda: len(made) == 2 and sup.running() is made[1])
    finally:
        sup.stop(1)
    history.close()
    ops = History.load(tmp_path / "history.jsonl").ops
    mine = [(o["process"], o["f"], o["value"]) for o in ops]
    assert [f for _, f, _ in mine][:5] == [
        names.SUT_START,
        names.SUT_EVENT,
        names.SUT_EVENT,
        names.SUT_EVENT,
        names.SUT_EVENT,
    ]
    events = [v for p, f, v in mine if f == names.SUT_EVENT]
    assert all(p == names.SUT_PROCESS for p, f, _ in mine if f == names.SUT_EVENT)
    assert events == [  # each once, the half-written line when it was whole, no `sealed`
        {"incarnation": 0, "event": "started", "fields": {"seconds": 1.5}},
        {"incarnation": 0, "event": "batch_start", "fields": {"batch": 0}},
        {"incarnation": 0, "event": "batch_start", "fields": {"batch": 1}},
        {
            "incarnation": 0,
            "event": "failpoint",
            "fields": {"name": "data.after_commit", "action": "crash"},
        },
    ]
    first_exit = next(v for _, f, v in mine if f == names.SUT_EXIT)
    assert first_exit["incarnation"] == 0 and first_exit["code"] == -9
    assert first_exit["fired"] == {"failpoint": "data.after_commit", "action": "crash"}
    raw = (tmp_path / "history.jsonl").read_text()
    assert '"sut-start"' in raw and '"sut-exit"' in raw and "pipeline-" not in raw


def test_an_event_tail_reads_each_line_once_and_cuts_a_huge_event(tmp_path: Path) -> None:
    history = HistoryWriter(tmp_path / "history.jsonl")
    tail = EventTail(history, 4)
    text = _line("compacted", since=3) + _line("crashed", error="x" * 9000) + '{"event": "fen'
    assert tail.read(text) == 2
    assert tail.read(text) == 0  # nothing new
    assert tail.read(text + 'ced"}', final=True) == 1  # the last line, once it exited
    history.close()
    values = [o["value"] for o in History.load(tmp_path / "history.jsonl").ops]
    assert values[0] == {"incarnation": 4, "event": "compacted", "fields": {"since": 3}}
    assert values[1]["event"] == "crashed" and "fields" not in values[1]
    assert "over 8,000" in values[1]["note"]
    assert values[2] == {"incarnation": 4, "event": "fenced", "fields": {}}


def test_the_batches_section_reads_who_started_a_batch_from_the_history(tmp_path: Path) -> None:
    export = tmp_path / names.EXPORT_DIR
    export.mkdir()
    versions = {
        "tables": {"data": {"1": {"batch": 0}, "2": {"batch": 1}}},
        "batches": {"planned": [0, 1], "committed": [0, 1]},
    }
    (export / "versions.json").write_text(json.dumps(versions))
    (tmp_path / "logs").mkdir()  # a log saying otherwise is not read
    (tmp_path / "logs" / "sut-0.log").write_text(_line("batch_start", batch=0) * 3)

    def event(n: int, batch: int) -> dict[str, object]:
        value = {"incarnation": n, "event": "batch_start", "fields": {"batch": batch}}
        return {"process": "sut", "f": names.SUT_EVENT, "value": value}

    found = batch_rows(tmp_path, [event(0, 0), event(0, 1), event(1, 1)])
    assert found is not None
    rows, counts = found
    assert counts == {"batches": 2, "ran_more_than_once": 1, "committed_twice": 0}
    assert rows[0][-2:] == ["0", ""] and rows[1][-2:] == ["0, 1", "replayed"]
    # a run stored before the history held the system's events: not recorded, not "never ran"
    rows, counts = batch_rows(tmp_path, []) or ([], {})
    assert counts["ran_more_than_once"] is None and rows[0][-2] == NOT_RECORDED


def test_the_export_goes_to_export(tmp_path: Path) -> None:
    write_export(tmp_path, {"data": {"upper": 1, "since": 0}}, [[("data", b"k", b"v", 0, 1)]])
    assert sorted(p.name for p in (tmp_path / "export").iterdir()) == [
        "frontiers.json",
        "updates.parquet",
    ]
    assert not (tmp_path / "persist").exists()
    assert Export.of(tmp_path) == Export("export")
    assert set(describe(tmp_path)) == {"export/frontiers.json", "export/updates.parquet"}


def test_logs_are_named_sut_and_the_archive_is_runs() -> None:
    assert names.sut_log(3) == "sut-3.log"
    assert TestConfig().runs_dir == "runs"


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--store", "x"],
        ["serve", "--store", "x"],
        ["cleanup", "--store", "x"],
    ],
)
def test_the_old_store_flag_is_refused_in_one_line_naming_runs(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        cli.main(argv)
    assert stopped.value.code == cli.EXIT_BAD_ARGS
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert "--store is now --runs" in err and "--runs x" in err
