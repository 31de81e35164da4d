"""The step loop on an in-memory source and a real SQLite store: crash at every failpoint
(with the ``error`` action), restart, catch up, and compare every sealed step with the model."""

from __future__ import annotations

import random
import threading
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest

from sealcheck.harness.run.workload import UpsertMix, upsert_records
from sealcheck.rundir.files import TopicRecord
from sealcheck_upsert_source import failpoints
from sealcheck_upsert_source.broken import make_loop
from sealcheck_upsert_source.failpoints import FAILPOINTS, FailpointError
from sealcheck_upsert_source.loop import (
    BINDINGS,
    DATA,
    ERRORS,
    Fenced,
    LoopConfig,
    StepLoop,
    StoreInconsistent,
    choose_range,
    decode_bindings,
)
from sealcheck_upsert_source.persist import Persist, Update, open_store
from sealcheck_upsert_source.source import SourceUnavailable
from sealcheck_upsert_source.upsert import SourceRecord, winners
from tests.oracle import check_every_step


class ListSource:
    """A topic held in memory; ``grow`` appends more records as producers would."""

    def __init__(self, partitions: int) -> None:
        self.logs: list[list[TopicRecord]] = [[] for _ in range(partitions)]

    def grow(self, pairs: list[tuple[bytes | None, bytes | None]]) -> None:
        """Keys go to a partition by hash (Kafka's default); null keys round-robin."""
        for i, (k, v) in enumerate(pairs):
            p = zlib.crc32(k) % len(self.logs) if k is not None else i % len(self.logs)
            self.logs[p].append(TopicRecord(p, len(self.logs[p]), k, v))

    def records(self) -> list[TopicRecord]:
        return [r for log in self.logs for r in log]

    def log_end(self) -> dict[int, int]:
        return {p: len(log) for p, log in enumerate(self.logs)}

    def read_winners(self, start: dict[int, int], end: dict[int, int]) -> list[SourceRecord]:
        recs = [
            SourceRecord(r.partition, r.offset, r.key, r.value)
            for p, log in enumerate(self.logs)
            for r in log[start.get(p, 0) : end.get(p, 0)]
        ]
        return list(winners(recs).values())

    def close(self) -> None:
        pass


def quiet(event: dict[str, object]) -> None:
    del event


def verify_every_step(store: Persist, topic: list[TopicRecord]) -> int:
    result = check_every_step(store, topic)
    assert result.problems == []
    return result.steps.stop


def catch_up(store: Persist, source: ListSource, config: LoopConfig) -> StepLoop:
    loop = make_loop(store, source, config, quiet)
    loop.rehydrate()
    while loop.step():
        pass
    return loop


@pytest.fixture
def source() -> ListSource:
    src = ListSource(3)
    src.grow(upsert_records(random.Random(3), 3000, UpsertMix(keys=200, bad_ratio=0.05)))
    return src


def test_choose_range_shares_the_cap_fairly() -> None:
    assert choose_range({}, {0: 100, 1: 3, 2: 0}, 50) == {0: 47, 1: 3}
    assert choose_range({0: 10}, {0: 100, 1: 100}, 10) == {0: 15, 1: 5}
    assert choose_range({0: 10}, {0: 10}, 10) == {0: 10}
    assert choose_range({0: 10}, {0: 5}, 10) == {0: 10}  # never backwards


def test_clean_run_matches_the_model_at_every_step(tmp_path: Path, source: ListSource) -> None:
    store = open_store(str(tmp_path / "s.db"))
    loop = catch_up(store, source, LoopConfig(max_records_per_step=250))
    assert loop.t == 12
    assert verify_every_step(store, source.records()) == 12
    assert not loop.step()  # idle: nothing new, nothing sealed


class WatchedSource(ListSource):
    """A ListSource that records each read (range and thread), can report a stale log end
    once (``lagging``: the value of the next ``log_end`` call), fail the next ``log_end``
    (``unreachable``) and fail one read (``fail``: the range whose first read raises)."""

    def __init__(self, partitions: int) -> None:
        super().__init__(partitions)
        self.reads: list[tuple[dict[int, int], str]] = []
        self.lagging: dict[int, int] | None = None
        self.fail: dict[int, int] | None = None
        self.unreachable = False

    def log_end(self) -> dict[int, int]:
        if self.unreachable:
            self.unreachable = False
            raise SourceUnavailable("the broker did not answer")
        lagging, self.lagging = self.lagging, None
        return lagging if lagging is not None else super().log_end()

    def read_winners(self, start: dict[int, int], end: dict[int, int]) -> list[SourceRecord]:
        self.reads.append((dict(end), threading.current_thread().name))
        if end == self.fail:
            self.fail = None
            raise SourceUnavailable("the broker went away mid-read")
        return super().read_winners(start, end)


def backlog(
    tmp_path: Path, records: int, log: Callable[[dict[str, object]], None] = quiet
) -> tuple[WatchedSource, Persist, StepLoop]:
    """A partition of ``records`` records (7 keys), steps of 10, and a rehydrated loop on an
    empty store."""
    source = WatchedSource(1)
    source.grow([(b"k%d" % (i % 7), b"%d" % i) for i in range(records)])
    store = open_store(str(tmp_path / "s.db"))
    loop = StepLoop(store, source, LoopConfig(max_records_per_step=10), log)
    loop.rehydrate()
    return source, store, loop


def test_a_backlog_is_read_ahead_while_the_last_step_commits(tmp_path: Path) -> None:
    events: list[dict[str, object]] = []
    source, store, loop = backlog(tmp_path, 35, events.append)
    while loop.step():
        pass
    sealed = [e for e in events if e["event"] == "sealed"]
    # steps of 10, 10, 10, 5: the 2nd and 3rd were read while the one before committed; the
    # 4th is not a full step, so the 3rd read nothing ahead
    assert [e["read_ahead"] for e in sealed] == [False, True, True, False]
    assert source.reads == [
        ({0: 10}, "MainThread"),
        ({0: 20}, "read-ahead"),
        ({0: 30}, "read-ahead"),
        ({0: 35}, "MainThread"),
    ]
    assert verify_every_step(store, source.records()) == 4


def test_a_read_ahead_of_another_range_than_the_one_bound_is_dropped(tmp_path: Path) -> None:
    source, store, loop = backlog(tmp_path, 30)
    assert loop.step()  # binds [0, 10) and reads [10, 20) ahead
    source.lagging = {0: 15}  # the next step sees a log end behind what was read ahead
    assert loop.step()  # binds [10, 15): the read of [10, 20) is not used
    while loop.step():
        pass
    assert [end for end, _ in source.reads] == [{0: 10}, {0: 20}, {0: 15}, {0: 25}, {0: 30}]
    assert decode_bindings(store.snapshot(BINDINGS, 1)) == {0: 15}
    assert verify_every_step(store, source.records()) == loop.t == 4


@pytest.mark.parametrize("gap", ["unreachable", "nothing to bind"])
def test_a_read_ahead_is_dropped_by_an_attempt_that_binds_nothing(tmp_path: Path, gap: str) -> None:
    """Records read before a gap are never taken after it (Kafka may have lost and reused
    those offsets meanwhile): the step after reads its range again."""
    source, store, loop = backlog(tmp_path, 30)
    assert loop.step()  # binds [0, 10) and reads [10, 20) ahead
    if gap == "unreachable":
        source.unreachable = True
        with pytest.raises(SourceUnavailable):
            loop.step()
    else:
        source.lagging = {0: 10}  # a log end that went back to what is bound
        assert not loop.step()
    while loop.step():
        pass
    assert source.reads == [
        ({0: 10}, "MainThread"),
        ({0: 20}, "read-ahead"),  # dropped
        ({0: 20}, "MainThread"),
        ({0: 30}, "read-ahead"),
    ]
    assert verify_every_step(store, source.records()) == loop.t == 3


def test_the_last_step_of_a_bounded_run_reads_nothing_ahead(tmp_path: Path) -> None:
    source, _, loop = backlog(tmp_path, 50)
    assert loop.run(threading.Event(), max_steps=2) == 2
    assert source.reads == [({0: 10}, "MainThread"), ({0: 20}, "read-ahead")]


def test_a_failed_read_ahead_fails_its_step_which_is_replayed(tmp_path: Path) -> None:
    source, store, loop = backlog(tmp_path, 30)
    source.fail = {0: 20}
    assert loop.step()
    with pytest.raises(SourceUnavailable):
        loop.step()  # bound [10, 20); its read (ahead) failed
    while loop.step():  # the bound step is replayed (read again), then the rest
        pass
    assert [end for end, _ in source.reads] == [{0: 10}, {0: 20}, {0: 20}, {0: 30}]
    assert verify_every_step(store, source.records()) == loop.t == 3


@pytest.mark.parametrize("point", sorted(FAILPOINTS))
def test_error_at_every_failpoint_then_restart(
    tmp_path: Path, source: ListSource, point: str
) -> None:
    config = LoopConfig(max_records_per_step=250, retain_steps=3, compact_every=2)
    store = open_store(str(tmp_path / "s.db"))
    if point == "rehydrate.mid":
        StepLoop(store, source, config, quiet).step()
    failpoints.arm(f"{point}=error@2" if point != "rehydrate.mid" else f"{point}=error@1")
    try:
        with pytest.raises(FailpointError):
            catch_up(store, source, config)
    finally:
        failpoints.arm("")
    store.close()
    store = open_store(str(tmp_path / "s.db"))  # the restarted incarnation
    loop = catch_up(store, source, config)
    assert loop.bound == source.log_end()
    assert verify_every_step(store, source.records()) == loop.t


def test_replays_a_bound_step_exactly_after_a_crash(tmp_path: Path, source: ListSource) -> None:
    store = open_store(str(tmp_path / "s.db"))
    config = LoopConfig(max_records_per_step=250)
    failpoints.arm("bindings.after_append=error@1")
    try:
        with pytest.raises(FailpointError):
            StepLoop(store, source, config, quiet).step()
    finally:
        failpoints.arm("")
    bound_before = decode_bindings(store.snapshot(BINDINGS, 0))
    source.grow([(b"late", b"1")] * 500)  # more input arrives while the pipeline is down
    loop = StepLoop(store, source, config, quiet)
    loop.rehydrate()
    loop.step()
    assert loop.bound == bound_before  # step 0 replayed its bound range, not the new log end


def test_second_writer_fences_the_first(tmp_path: Path, source: ListSource) -> None:
    config = LoopConfig(max_records_per_step=250)
    first = StepLoop(open_store(str(tmp_path / "s.db")), source, config, quiet)
    first.rehydrate()
    first.step()
    second = StepLoop(open_store(str(tmp_path / "s.db")), source, config, quiet)
    second.rehydrate()
    second.step()
    with pytest.raises(Fenced, match="fenced"):
        first.step()
    while second.step():
        pass
    assert verify_every_step(second.store, source.records()) == second.t


def test_resume_refuses_bindings_behind_data(tmp_path: Path) -> None:
    store = open_store(str(tmp_path / "s.db"))
    store.compare_and_append(DATA, [Update(b"k", b"1", 0, 1)], 0, 1)
    store.compare_and_append(ERRORS, [], 0, 1)
    with pytest.raises(StoreInconsistent, match="bindings are sealed at 0, behind data at 1"):
        StepLoop(store, ListSource(1), LoopConfig(), quiet).rehydrate()


def test_idle_loop_backs_off_and_stops(tmp_path: Path) -> None:
    src = ListSource(1)
    loop = StepLoop(open_store(str(tmp_path / "s.db")), src, LoopConfig(), quiet)
    loop.rehydrate()
    calls = 0
    real = src.log_end

    def counting() -> dict[int, int]:
        nonlocal calls
        calls += 1
        return real()

    src.log_end = counting  # type: ignore[method-assign]
    stop = threading.Event()
    timer = threading.Timer(1.0, stop.set)
    timer.start()
    assert loop.run(stop) == 0
    assert 3 <= calls <= 8  # 50, 100, 200, 400 ms …: polls, not a spin


def test_broken_mode_reappends_the_last_step_after_a_restart(
    tmp_path: Path, source: ListSource
) -> None:
    store = open_store(str(tmp_path / "s.db"))
    config = LoopConfig(max_records_per_step=500, broken="reappend-after-restart")
    loop = make_loop(store, source, config, quiet)
    loop.rehydrate()
    loop.step()
    loop.step()
    last = [u for u in store.updates("data", 1, 2) if u.diff > 0]
    catch_up(store, source, config)  # the "restart": a new incarnation on the same store
    again = {(u.key, u.value) for u in store.updates("data", 2, 3) if u.diff > 0}
    assert last and {(u.key, u.value) for u in last} <= again
    with pytest.raises(AssertionError):
        verify_every_step(store, source.records())


def test_compaction_stops_at_a_read_hold_for_at_most_hold_steps(
    tmp_path: Path, source: ListSource
) -> None:
    """With ``hold_steps`` a reader's hold (the harness's captures) keeps the steps it has not
    read; until one holds, ``hold_steps`` are kept; a hold left behind costs at most that."""
    from sealcheck.systems.upsert_source.store import COLLECTIONS, hold_captured

    db = str(tmp_path / "s.db")
    store = open_store(db)
    events: list[dict[str, object]] = []
    config = LoopConfig(max_records_per_step=250, retain_steps=1, compact_every=1, hold_steps=6)
    loop = make_loop(store, source, config, events.append)
    loop.rehydrate()

    def step_to(t: int) -> int:
        while loop.t < t:
            assert loop.step()
        return store.sinces().get(DATA, 0)

    assert step_to(6) == 0  # no hold yet: 6 steps kept
    assert step_to(7) == 1
    assert hold_captured(db, dict.fromkeys(COLLECTIONS, 4))  # steps 0-3 captured: hold at 3
    assert step_to(8) == 3  # min(t - 1, max(3, t - 6))
    assert step_to(9) == 3  # the hold keeps step 4 on ...
    assert step_to(10) == 4  # ... until it is hold_steps behind
    assert hold_captured(db, dict.fromkeys(COLLECTIONS, 10))
    assert step_to(11) == 9
    assert step_to(12) == 9 and loop.t == 12  # the log end: the hold still at 9
    compacted = [(e["since"], e.get("held")) for e in events if e.get("event") == "compacted"]
    assert compacted == [(1, None), (3, 3), (4, 3), (9, 9)]
    assert verify_every_step(store, source.records()) == 12
