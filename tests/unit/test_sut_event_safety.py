"""Whatever a system under test logs, the history stays readable (its events' fields are nested
and kept only when plain JSON), a history line that does not fit the schema is named, logs are
followed by offset (each byte read once, a lone carriage return counted the same on both of a
container's paths), and a failing event reader is recorded once without ending the run."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from sealcheck.harness.run.events import EventPoller, EventTail
from sealcheck.harness.run.exits import exit_evidence
from sealcheck.harness.run.supervisor import FailpointFile, Supervisor
from sealcheck.infra.containers.topology import SutContainer
from sealcheck.infra.local import LocalProcess
from sealcheck.report.batches import started_by
from sealcheck.rundir import names
from sealcheck.rundir.history import History, HistoryError
from sealcheck.rundir.history_writer import HistoryWriter, record_inputs
from sealcheck.rundir.schema import first_unreadable
from tests.incarnations import FakeIncarnation

#: event lines a system may log that used to make the history unreadable
HOSTILE = [
    '{"event": "batch_start", "batch": 3, "partition": "all"}',
    '{"event": "batch", "offset": 1.5}',
    '{"event": "compacted", "key_hex": 5, "value_hex": [1, 2]}',
    '{"event": "crashed", "partition": true, "offset": 99999999999999999999}',
    '{"event": "stopped", "lag": NaN}',
    '{"event": "started", "lag": Infinity, "x": -Infinity}',
    '{"event": "fenced", "lag": 1e400}',
    '{"event": "rehydrated", "deep": ' + "[" * 40 + "]" * 40 + "}",
]


def _ops_and_writes(path: Path) -> tuple[list[dict[str, Any]], pl.DataFrame]:
    history = History.load(path)
    assert isinstance(history.acked, pl.LazyFrame)
    return history.ops, history.collect(history.acked)


def test_hostile_event_fields_leave_the_history_readable(tmp_path: Path) -> None:
    writer = HistoryWriter(tmp_path / "history.jsonl")
    writer.append("w", "ok", "write", {"key": "k", "value": "v", "partition": 0, "offset": 7})
    tail = EventTail(writer, 2)
    assert tail.read("\n".join(HOSTILE) + "\n") == len(HOSTILE)
    record_inputs(writer, tmp_path)
    writer.close()
    ops, writes = _ops_and_writes(tmp_path / "history.jsonl")
    assert writes["offset"].to_list() == [7]  # the run's writes load
    events = [o["value"] for o in ops if o["f"] == names.SUT_EVENT]
    assert [e["event"] for e in events] == [
        "batch_start",
        "batch",
        "compacted",
        "crashed",
        "stopped",
        "started",
        "fenced",
        "rehydrated",
    ]
    assert events[0] == {
        "incarnation": 2,
        "event": "batch_start",
        "fields": {"batch": 3, "partition": "all"},
    }
    assert events[1]["fields"] == {"offset": 1.5}
    assert events[3]["fields"]["offset"] == 99999999999999999999
    for value in events[4:]:  # NaN, infinities, deep nesting: the name only, and why
        assert "fields" not in value and "not plain JSON" in value["note"]
    assert started_by(ops) == {3: [2]}  # the report still reads its batch


def test_exit_evidence_keeps_only_text_of_a_fired_failpoint(tmp_path: Path) -> None:
    log = '{"event": "failpoint", "name": NaN, "action": {"crash": 1}}\n'
    evidence = exit_evidence(-9, log)
    assert evidence["fired"] == {"failpoint": None, "action": None}
    writer = HistoryWriter(tmp_path / "history.jsonl")
    writer.append("supervisor", "info", names.SUT_EXIT, evidence)
    writer.close()
    assert History.load(tmp_path / "history.jsonl").ops[0]["value"] == evidence


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ('{"partition":"all"}', "partition is 'all'"),
        ('{"offset":1.5}', "offset is 1.5"),
        ('{"x":NaN}', "NaN is not JSON"),
        ('{"x":1e400}', "out of range"),
        ('{"partition":true}', "partition is True"),
    ],
)
def test_a_line_that_does_not_fit_the_schema_is_named(
    tmp_path: Path, value: str, said: str
) -> None:
    lines = [
        '{"index":0,"time":1,"process":"w","type":"ok","f":"write","value":{"key":"k","offset":1}}',
        '{"index":1,"time":2,"process":"sut","type":"info","f":"x","value":{"partition":1}}',
        '{"index":2,"time":3,"process":"sut","type":"info","f":"x","value":' + value + "}",
        '{"index":3,"time":4,"process":"w","type":"ok","f":"write","value":{"key":"k","offset":2}}',
    ]
    path = tmp_path / "history.jsonl"
    path.write_text("\n".join(lines) + "\n")
    assert first_unreadable(path)[0] == 3
    history = History.load(path)
    assert isinstance(history.acked, pl.LazyFrame)
    with pytest.raises(HistoryError) as raised:
        history.collect(history.acked)
    message = str(raised.value)
    assert "line 3:" in message and said in message and "no bad line" not in message
    # read eagerly (a torn last line follows): the same error, not polars'
    path.write_text("\n".join(lines) + "\n" + '{"index":4,"ti')
    with pytest.raises(HistoryError, match="line 3:"):
        History.load(path)


def test_a_readable_history_has_no_unreadable_line(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    path.write_text('{"index":0,"time":1,"process":"a","type":"info","f":"x","value":null}\n')
    assert first_unreadable(path)[0] == 0


class OffsetNode:
    """A node offering ``log_from``: remembers every offset asked for."""

    def __init__(self) -> None:
        self.data = b""
        self.asked: list[int] = []

    def log_from(self, offset: int) -> bytes:
        self.asked.append(offset)
        return self.data[offset:]

    def log_text(self) -> str:  # never used when log_from exists
        raise AssertionError("log_text read whole")


def test_the_tail_reads_each_byte_once_from_its_offset(tmp_path: Path) -> None:
    writer = HistoryWriter(tmp_path / "history.jsonl")
    tail, node = EventTail(writer, 0), OffsetNode()
    first = b'{"event": "started"}\n{"event": "batch_start", "batch": 0}\n{"event": "ba'
    node.data = first
    assert tail.poll(node) == 2  # type: ignore[arg-type]
    node.data += b'tch", "batch": 0}\n{"event": "stopped"}'
    assert tail.poll(node) == 1  # type: ignore[arg-type]
    assert tail.poll(node, final=True) == 1  # type: ignore[arg-type]
    assert node.asked == [
        0,
        first.rindex(b"\n") + 1,
        len(node.data) - len('{"event": "stopped"}'),
    ]
    assert tail.poll(node, final=True) == 0  # type: ignore[arg-type]


def test_a_local_process_log_is_read_from_an_offset(tmp_path: Path) -> None:
    log = tmp_path / "sut-0.log"
    proc = LocalProcess("sut-0", ["true"], {}, log)
    assert proc.log_from(0) == b""  # no log yet
    log.write_bytes(b"hello\nworld\n")
    assert proc.log_from(6) == b"world\n"


class FakeContainer:
    """What :class:`SutContainer` reads of a Docker container: its raw log."""

    def __init__(self) -> None:
        self.raw = b""

    def logs(self) -> bytes:
        return self.raw


def test_a_lone_carriage_return_does_not_record_a_container_event_twice(tmp_path: Path) -> None:
    box = SutContainer(None, "sut-0", "img", [], {}, tmp_path / "sut-0.log", None)  # type: ignore[arg-type]
    box.container = FakeContainer()
    writer = HistoryWriter(tmp_path / "history.jsonl")
    tail = EventTail(writer, 0)
    box.container.raw = b'progress 10%\rprogress 20%\n{"event": "started"}\r\n{"event": "batch"}\n'
    running = box.log_text()
    assert tail.poll(box) == 2  # type: ignore[arg-type]
    box.log_path.write_bytes(box.container.raw)  # it exited: its log is copied, as wait_exit does
    box._code = 0
    assert box.log_text() == running  # the same text on both paths
    assert tail.poll(box, final=True) == 0  # type: ignore[arg-type]
    writer.close()
    ops = History.load(tmp_path / "history.jsonl").ops
    assert [o["value"]["event"] for o in ops] == ["started", "batch"]


class FlakyIncarnation(FakeIncarnation):
    """An incarnation whose log cannot be read while it runs (then can, once it exited)."""

    def __init__(self, n: int) -> None:
        super().__init__(n, base=3000)
        self.reads = 0

    def log_text(self) -> str:
        self.reads += 1
        if self.alive:
            raise RuntimeError("docker said no")
        return '{"event": "started"}\n{"event": "fenced"}\n'


def test_a_failing_event_reader_is_recorded_once_and_the_events_arrive_at_exit(
    tmp_path: Path,
) -> None:
    made: list[FlakyIncarnation] = []

    def make(n: int) -> FlakyIncarnation:
        made.append(FlakyIncarnation(n))
        return made[-1]

    history = HistoryWriter(tmp_path / "history.jsonl")
    sup = Supervisor(make, history, FailpointFile(tmp_path / "fp"), lambda _: None, 0.0, 0.01)  # type: ignore[arg-type]
    sup.start()
    try:
        deadline = time.monotonic() + 5
        while history.counts[(names.SUT_EVENT_READER_FAILED, "info")] == 0:
            assert time.monotonic() < deadline, "the reader's failure was not recorded"
            time.sleep(0.01)
        time.sleep(0.05)  # the poller has stopped: no second note
        made[0].kill()
        while history.counts[(names.SUT_EXIT, "info")] == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        sup.stop(1)
    history.close()
    ops = History.load(tmp_path / "history.jsonl").ops
    first = [o for o in ops if o["value"].get("incarnation") == 0]
    assert [o["f"] for o in first] == [
        names.SUT_START,
        names.SUT_EVENT_READER_FAILED,
        names.SUT_EVENT,
        names.SUT_EVENT,
        names.SUT_EXIT,
    ]
    assert "docker said no" in first[1]["value"]["error"]
    assert first[-1]["value"]["last_event"] == "fenced"


def test_a_poller_that_cannot_read_at_exit_still_returns(tmp_path: Path) -> None:
    class Broken(OffsetNode):
        def log_from(self, offset: int) -> bytes:
            raise OSError("gone")

    writer = HistoryWriter(tmp_path / "history.jsonl")
    poller = EventPoller(EventTail(writer, 5), Broken(), 10.0)  # type: ignore[arg-type]
    assert poller.finish() == 0 and poller.failed == "OSError: gone"
    assert writer.counts[(names.SUT_EVENT_READER_FAILED, "info")] == 1
