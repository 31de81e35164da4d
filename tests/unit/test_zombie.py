"""The supervisor's zombie mechanics with fake incarnations: a given-up incarnation keeps
running beside the new one, its exit is recorded as a zombie's, and one that does not end
after being let go is killed."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from sealcheck.harness.run.supervisor import FailpointFile, SupervisedNode, Supervisor
from sealcheck.rundir.history import History
from sealcheck.rundir.history_writer import HistoryWriter
from tests.incarnations import FakeIncarnation


def _until(cond: object, timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond() and time.monotonic() < deadline:  # type: ignore[operator]
        time.sleep(0.01)
    assert cond(), "condition not reached"  # type: ignore[operator]


def test_zombie_runs_beside_the_new_incarnation_and_its_exit_is_recorded(tmp_path: Path) -> None:
    made: list[FakeIncarnation] = []

    def make(n: int) -> FakeIncarnation:
        made.append(FakeIncarnation(n))
        return made[-1]

    history = HistoryWriter(tmp_path / "history.jsonl")
    sup = Supervisor(make, history, FailpointFile(tmp_path / "fp"), lambda _: None, 0.0)  # type: ignore[arg-type]
    node = SupervisedNode(sup, wait_s=5)
    sup.start()
    try:
        _until(lambda: sup.running() is not None)
        assert node.replace() == 1000
        _until(lambda: len(made) == 2 and sup.running() is made[1])
        assert made[0].alive  # the zombie still runs beside the new one
        threading.Timer(0.05, made[0].finish, (3,)).start()  # fenced once let go
        assert node.release(5) == [{"zombie": 1000, "code": 3, "killed": False}]
        assert node.replace() == 1001  # a zombie that never ends is killed
        _until(lambda: len(made) == 3)
        assert node.release(0.2) == [{"zombie": 1001, "code": -9, "killed": True}]
        assert node.release(0.2) == []
        assert made[2].alive and sup.refusing(frozenset({4}), 1) == ""
    finally:
        sup.stop(1)
    history.close()
    exits = [
        o["value"] for o in History.load(tmp_path / "history.jsonl").ops if o["f"] == "sut-exit"
    ]
    assert [(e["incarnation"], e["code"], e.get("zombie", False)) for e in exits] == [
        (0, 3, True),
        (1, -9, True),
        (2, 0, False),
    ]


def test_an_incarnation_that_cannot_be_started_is_retried_then_given_up_saying_why(
    tmp_path: Path,
) -> None:
    writer = HistoryWriter(tmp_path / "history.jsonl")
    tries: list[int] = []

    def make(n: int) -> FakeIncarnation:
        tries.append(n)
        raise RuntimeError(f"docker refused incarnation {n}")

    sup = Supervisor(make, writer, FailpointFile(tmp_path / "fp"), lambda text: None, 0.01)
    sup.start()
    _until(lambda: sup.start_error is not None)
    sup.stop(1)
    writer.close()
    assert tries == [0, 0, 0]  # the same incarnation, three attempts
    assert sup.start_error is not None
    assert "incarnation 0 of the system under test could not be started (3 attempts)" in (
        sup.start_error
    )
    assert "RuntimeError: docker refused incarnation 0" in sup.start_error
    failed = [o for o in History.load(tmp_path / "history.jsonl").ops if o["f"].endswith("failed")]
    assert [o["value"]["attempt"] for o in failed] == [1, 2, 3]
