"""Every deliberate bug of the pipeline (``sealcheck_upsert_source.broken``) is invisible in a
faultless run and shows (to the slow oracle, or as a store that cannot be resumed) once its fault
happens: so each variant in the self-test's matrix is a real bug with a known trigger."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from sealcheck.harness.run.workload import UpsertMix, upsert_records
from sealcheck_upsert_source import failpoints
from sealcheck_upsert_source.broken import BROKEN_MODES, durable_commits, make_loop
from sealcheck_upsert_source.loop import LoopConfig, StepLoop, StoreInconsistent
from sealcheck_upsert_source.persist import Persist, open_store
from tests.oracle import check_every_step
from tests.unit.test_loop import ListSource, quiet

#: How each variant's bug is reached.
TRIGGERS = {
    "reappend-after-restart": "restart",
    "stale-rehydrate": "restart",
    "rewind-bindings": "restart",
    "truncate-values-after-restart": "restart",
    "replay-drops-tombstones": "crash:bindings.after_append",
    "replay-skips-range": "crash:bindings.after_append",
    "data-before-bindings": "crash:data.after_commit",
    "split-data-errors": "crash:data.after_commit",
    # no failpoint between its commits: a crash just after the data's commit, from below
    "errors-apart": "crash after data",
    "ignore-fencing": "second writer",
    "retry-unknown-commits": "indeterminate:data.after_commit",
    # needs a lost page cache: caught end to end on the lazy filesystem
    # (tests/integration/test_lost_writes.py); here only the missing fsync is checked
    "non-durable-commits": "power cut",
}


class _Crash(Exception):
    """A process killed just after a commit of the store returned."""


def _crash_after_data(store: Persist) -> None:
    """Make the store's next commit that holds data "kill" its writer once it has returned
    (what the boundary nemesis does from below at ``restart:commit-k``)."""
    one, many = store.compare_and_append, store.compare_and_append_many

    def append(collection: str, *args: object) -> None:
        one(collection, *args)  # type: ignore[arg-type]
        if collection == "data":
            raise _Crash(collection)

    def append_many(batches: dict[str, object]) -> None:
        many(batches)  # type: ignore[arg-type]
        if "data" in batches:
            raise _Crash("data")

    store.compare_and_append = append  # type: ignore[method-assign]
    store.compare_and_append_many = append_many  # type: ignore[method-assign]


def _synchronous(store: Persist) -> int:
    """SQLite's ``PRAGMA synchronous`` of the store's connection (0 OFF, 2 FULL)."""
    return int(store._db.execute("PRAGMA synchronous").fetchone()[0])  # type: ignore[attr-defined]


def test_every_variant_has_a_trigger() -> None:
    assert set(TRIGGERS) == set(BROKEN_MODES)
    assert len(BROKEN_MODES) >= 10


def _source() -> ListSource:
    src = ListSource(3)
    mix = UpsertMix(keys=60, bad_ratio=0.05, tombstone_ratio=0.2, value_size=24)
    src.grow(upsert_records(random.Random(5), 2400, mix))
    return src


def _loop(store: Persist, src: ListSource, mode: str) -> StepLoop:
    loop = make_loop(store, src, LoopConfig(max_records_per_step=200, broken=mode), quiet)
    loop.rehydrate()
    return loop


def _problems(store: Persist, src: ListSource) -> list[object]:
    return list(check_every_step(store, src.records()).problems)


@pytest.mark.parametrize("mode", sorted(BROKEN_MODES))
def test_variant_is_correct_without_its_fault(tmp_path: Path, mode: str) -> None:
    src, store = _source(), open_store(str(tmp_path / "s.db"))
    loop = _loop(store, src, mode)
    while loop.step():
        pass
    assert loop.bound == src.log_end()
    assert _problems(store, src) == []


@pytest.mark.parametrize("mode", sorted(BROKEN_MODES))
def test_variant_is_caught_once_its_fault_happens(tmp_path: Path, mode: str) -> None:
    src, path = _source(), str(tmp_path / "s.db")
    trigger = TRIGGERS[mode]
    if trigger == "power cut":
        store = open_store(path, durable=durable_commits(mode))
        assert _synchronous(store) == 0  # commits return before they reach the disk
        return
    first = _loop(open_store(path), src, mode)
    for _ in range(3):
        first.step()
    if trigger == "crash after data":
        _crash_after_data(first.store)
        with pytest.raises(_Crash):
            first.step()
    if trigger.startswith(("crash:", "indeterminate:")):
        failpoints.arm(trigger.split(":")[1] + "=error@1")
        try:
            first.step()  # a crash raises; a variant that swallows the error goes on
        except failpoints.FailpointError:
            pass
        finally:
            failpoints.arm("")
    if trigger == "second writer":
        second = _loop(open_store(path), src, mode)
        second.step()
        first.step()  # the zombie writes on (a correct loop is fenced here)
        first = second
    elif not trigger.startswith("indeterminate:"):
        try:
            first = _loop(open_store(path), src, mode)  # the restarted incarnation
        except StoreInconsistent:
            return  # caught: the store it left cannot be resumed
    while first.step():
        pass
    assert _problems(first.store, src) != [], f"{mode} was not caught after {trigger}"


@pytest.mark.parametrize("trigger", sorted(set(TRIGGERS.values())))
def test_the_correct_loop_survives_every_trigger(tmp_path: Path, trigger: str) -> None:
    from sealcheck_upsert_source.loop import Fenced

    src, path = _source(), str(tmp_path / "s.db")
    first = _loop(open_store(path), src, None)  # type: ignore[arg-type]
    if trigger == "power cut":
        assert _synchronous(first.store) == 2  # FULL: a commit returns once it is on disk
        return
    for _ in range(3):
        first.step()
    if trigger == "crash after data":
        _crash_after_data(first.store)
        with pytest.raises(_Crash):
            first.step()
    if ":" in trigger:
        failpoints.arm(trigger.split(":")[1] + "=error@1")
        try:
            with pytest.raises(failpoints.FailpointError):
                first.step()
        finally:
            failpoints.arm("")
    if trigger == "second writer":
        second = _loop(open_store(path), src, None)  # type: ignore[arg-type]
        second.step()
        with pytest.raises(Fenced):
            first.step()
    last = _loop(open_store(path), src, None)  # type: ignore[arg-type]
    while last.step():
        pass
    assert last.bound == src.log_end()
    assert _problems(last.store, src) == []
