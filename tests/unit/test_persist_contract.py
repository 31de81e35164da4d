"""The persist contract: every backend must pass these (parametrise ``location`` to add one).

SQLite runs in the unit suite; PostgreSQL (a real server in a container) in the containers
suite, same tests.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from sealcheck.systems.upsert_source.store import COLLECTIONS, READER, hold_captured
from sealcheck_upsert_source import failpoints
from sealcheck_upsert_source.persist import (
    Batch,
    InvariantViolation,
    Persist,
    ReadBelowSince,
    ReadNotSealed,
    Update,
    UpperMismatch,
    open_store,
)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.containers)])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh store: a SQLite file, or a new database on the session's PostgreSQL container
    (those cases run in the containers suite)."""
    if request.param == "postgres":
        server = request.getfixturevalue("postgres_server")
        return str(server.new_database("contract"))
    return f"sqlite://{tmp_path / 'store.db'}"


@pytest.fixture
def store(location: str) -> Iterator[Persist]:
    s = open_store(location)
    yield s
    s.close()


def U(key: str, value: str, ts: int, diff: int) -> Update:
    return Update(key.encode(), value.encode(), ts, diff)


def test_new_store_is_empty(store: Persist) -> None:
    assert store.uppers() == {}
    assert store.sinces() == {}
    with pytest.raises(ReadNotSealed):
        store.snapshot("data", 0)


def test_append_seals_and_snapshot_consolidates(store: Persist) -> None:
    store.compare_and_append("data", [U("a", "1", 0, 1), U("b", "1", 0, 1)], 0, 1)
    store.compare_and_append("data", [U("a", "1", 1, -1), U("a", "2", 1, 1)], 1, 3)
    assert store.uppers() == {"data": 3}
    assert store.snapshot("data", 0) == {b"a": b"1", b"b": b"1"}
    assert store.snapshot("data", 1) == {b"a": b"2", b"b": b"1"}
    assert store.snapshot("data", 2) == {b"a": b"2", b"b": b"1"}
    with pytest.raises(ReadNotSealed):
        store.snapshot("data", 3)
    assert store.updates("data", 1, 2) == [U("a", "1", 1, -1), U("a", "2", 1, 1)]
    assert store.updates("data", 0, 3)[0] == U("a", "1", 0, 1)


def test_empty_append_only_moves_the_upper(store: Persist) -> None:
    store.compare_and_append("data", [], 0, 5)
    assert store.uppers()["data"] == 5
    assert store.snapshot("data", 4) == {}


def test_wrong_expected_upper_is_refused_and_writes_nothing(store: Persist) -> None:
    store.compare_and_append("data", [U("a", "1", 0, 1)], 0, 1)
    with pytest.raises(UpperMismatch) as exc:
        store.compare_and_append("data", [U("a", "9", 0, 1)], 0, 1)
    assert exc.value.expected == 0 and exc.value.actual == 1
    assert "fenced" in str(exc.value)
    assert store.updates("data", 0, 10) == [U("a", "1", 0, 1)]


@pytest.mark.parametrize(
    ("updates", "expected", "new", "fragment"),
    [
        ([U("a", "1", 1, 1)], 0, 1, r"outside \[0, 1\)"),
        ([], 2, 2, "must exceed"),
        ([U("a", "1", 0, 1)], 0, 0, "must exceed"),
    ],
)
def test_malformed_batches_are_refused(
    store: Persist, updates: list[Update], expected: int, new: int, fragment: str
) -> None:
    with pytest.raises(ValueError, match=fragment):
        store.compare_and_append("data", updates, expected, new)
    assert store.uppers() == {}


def test_append_many_is_all_or_nothing(store: Persist) -> None:
    store.compare_and_append("errors", [], 0, 1)  # errors is ahead: the pair must fail whole
    with pytest.raises(UpperMismatch):
        store.compare_and_append_many(
            {"data": Batch([U("a", "1", 0, 1)], 0, 1), "errors": Batch([], 0, 1)}
        )
    assert store.uppers() == {"errors": 1}
    assert store.updates("data", 0, 5) == []


def test_error_mid_append_rolls_back(store: Persist) -> None:
    failpoints.arm("data.mid_append=error@1")
    try:
        with pytest.raises(failpoints.FailpointError):
            store.compare_and_append("data", [U(f"k{i}", "v", 0, 1) for i in range(10)], 0, 1)
    finally:
        failpoints.arm("")
    assert store.uppers().get("data", 0) == 0
    assert store.updates("data", 0, 5) == []
    store.compare_and_append("data", [U("a", "1", 0, 1)], 0, 1)  # the store is still usable


@pytest.mark.parametrize(
    ("updates", "fragment"),
    [
        ([U("a", "1", 0, 1), U("a", "1", 0, 1)], "multiplicity 2"),
        ([U("a", "1", 0, -1)], "multiplicity -1"),
        ([U("a", "1", 0, 1), U("a", "2", 0, 1)], "two values"),
    ],
)
def test_snapshot_names_collection_key_and_ts_of_a_violation(
    store: Persist, updates: list[Update], fragment: str
) -> None:
    store.compare_and_append("data", updates, 0, 1)
    with pytest.raises(InvariantViolation, match=fragment) as exc:
        store.snapshot("data", 0)
    assert exc.value.collection == "data"
    assert exc.value.key == b"a"
    assert exc.value.ts == 0
    assert "'data'" in str(exc.value) and "b'a'" in str(exc.value)


def test_compaction_keeps_reads_at_or_after_since(store: Persist) -> None:
    for t in range(5):
        ups = [U("a", str(t), t, 1)] + ([U("a", str(t - 1), t, -1)] if t else [])
        store.compare_and_append("data", ups, t, t + 1)
    before = {t: store.snapshot("data", t) for t in range(2, 5)}
    assert store.compact("data", 3) is True
    assert store.compact("data", 2) is False  # sinces only advance
    assert store.sinces()["data"] == 3
    for t in range(3, 5):
        assert store.snapshot("data", t) == before[t]
    with pytest.raises(ReadBelowSince):
        store.snapshot("data", 2)
    below = store.updates("data", 0, 3)  # merged: the state at 2, once
    assert [(u.key, u.value, u.diff) for u in below] == [(b"a", b"2", 1)]
    with pytest.raises(ValueError, match="must stay readable"):
        store.compact("data", 5)


def test_compaction_touches_only_the_keys_changed_since_the_last_one(store: Persist) -> None:
    """A compaction costs what changed, not the state: a key unchanged since the last
    compaction keeps its merged update as it was, and reads stay the same (issue 28)."""
    store.compare_and_append("data", [U("a", "a0", 0, 1), U("b", "b0", 0, 1)], 0, 1)
    store.compare_and_append("data", [U("a", "a0", 1, -1), U("a", "a1", 1, 1)], 1, 2)
    store.compare_and_append("data", [], 2, 3)
    assert store.compact("data", 2) is True
    merged_b = [u for u in store.updates("data", 0, 2) if u.key == b"b"]
    store.compare_and_append("data", [U("a", "a1", 3, -1), U("a", "a2", 3, 1)], 3, 4)
    store.compare_and_append("data", [U("c", "c0", 4, 1)], 4, 5)
    before = {t: store.snapshot("data", t) for t in (4,)}
    assert store.compact("data", 4) is True
    below = store.updates("data", 0, 4)
    assert [u for u in below if u.key == b"b"] == merged_b  # untouched
    assert sorted((u.key, u.value, u.diff) for u in below) == [(b"a", b"a2", 1), (b"b", b"b0", 1)]
    assert store.snapshot("data", 4) == before[4] == {b"a": b"a2", b"b": b"b0", b"c": b"c0"}
    store.compare_and_append("data", [U("b", "b0", 5, -1)], 5, 6)  # a delete, then merged away
    store.compare_and_append("data", [], 6, 7)
    assert store.compact("data", 6) is True
    assert sorted(u.key for u in store.updates("data", 0, 6)) == [b"a", b"c"]
    assert store.snapshot("data", 6) == {b"a": b"a2", b"c": b"c0"}


def test_compaction_keeps_a_violation_visible(store: Persist) -> None:
    """A key with two live values stays so through compaction: merging must not hide it."""
    store.compare_and_append("data", [U("k", "v1", 0, 1), U("k", "v2", 0, 1)], 0, 1)
    store.compare_and_append("data", [U("j", "w", 1, 1)], 1, 2)
    store.compare_and_append("data", [], 2, 3)
    assert store.compact("data", 2) is True
    with pytest.raises(InvariantViolation, match="b'k'"):
        store.snapshot("data", 2)


def test_compaction_keeps_a_multiplicity_other_than_one_visible(store: Persist) -> None:
    """A value appended twice (diff 2 once summed) is written back as it is, not dropped."""
    store.compare_and_append("data", [U("k", "v", 0, 1), U("k", "v", 0, 1)], 0, 1)
    store.compare_and_append("data", [U("j", "w", 1, 1)], 1, 2)
    store.compare_and_append("data", [], 2, 3)
    assert store.compact("data", 2) is True
    assert [(u.key, u.diff) for u in store.updates("data", 0, 2)] == [(b"j", 1), (b"k", 2)]
    with pytest.raises(InvariantViolation, match="multiplicity 2"):
        store.snapshot("data", 2)


def test_error_mid_compaction_rolls_back(store: Persist) -> None:
    for t in range(3):
        store.compare_and_append("data", [U(f"k{t}", "v", t, 1)], t, t + 1)
    failpoints.arm("compact.mid=error@1")
    try:
        with pytest.raises(failpoints.FailpointError):
            store.compact("data", 2)
    finally:
        failpoints.arm("")
    assert store.sinces()["data"] == 0
    assert len(store.updates("data", 0, 3)) == 3
    assert store.compact("data", 2) is True  # nothing of the failed one is left in the way
    assert store.snapshot("data", 2) == {b"k0": b"v", b"k1": b"v", b"k2": b"v"}


def test_a_readers_hold_is_kept_and_only_moves_forward(location: str, store: Persist) -> None:
    """The harness writes its read hold straight into the tables (``hold``); the pipeline
    reads it back with ``holds()``."""
    assert store.holds() == {}
    assert hold_captured(location, {"bindings": 5, "data": 4}) is False  # errors not captured yet
    assert hold_captured(location, dict.fromkeys(COLLECTIONS, 1)) is False  # since 0 holds nothing
    assert store.holds() == {}
    assert hold_captured(location, {"bindings": 5, "data": 4, "errors": 6}) is True
    assert store.holds() == {READER: 3}  # the lowest captured step, minus one
    assert hold_captured(location, dict.fromkeys(COLLECTIONS, 3)) is True  # an older capture's...
    assert store.holds() == {READER: 3}  # ...does not move it back
    assert hold_captured(location, dict.fromkeys(COLLECTIONS, 9), reader="another") is True
    assert store.holds() == {READER: 3, "another": 8}


def test_a_hold_waits_for_no_lock_and_creates_no_store(tmp_path: Path) -> None:
    """The harness's hold never stalls its observer behind the pipeline's write lock (an
    append or a compaction): it gives up at once and the next capture writes it."""
    location = str(tmp_path / "store.db")
    assert hold_captured(location, dict.fromkeys(COLLECTIONS, 5)) is False
    assert not Path(location).exists()
    store = open_store(location)
    locker = sqlite3.connect(location, isolation_level=None)
    locker.execute("BEGIN IMMEDIATE")
    try:
        assert hold_captured(location, dict.fromkeys(COLLECTIONS, 5)) is False
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    assert store.holds() == {}
    assert hold_captured(location, dict.fromkeys(COLLECTIONS, 5)) is True
    assert store.holds() == {READER: 4}
    store.close()


def test_two_writers_one_is_fenced(location: str) -> None:
    """Two connections racing compare-and-append at the same upper: exactly one wins."""
    outcomes: list[str] = []
    barrier = threading.Barrier(2, timeout=30)

    def write(i: int) -> None:
        s = open_store(location)  # one connection per writer, as two processes would have
        barrier.wait()
        try:
            s.compare_and_append("data", [U("k", f"w{i}", 0, 1)], 0, 1)
            outcomes.append("won")
        except UpperMismatch:
            outcomes.append("fenced")
        finally:
            s.close()

    threads = [threading.Thread(target=write, args=(i,)) for i in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert sorted(outcomes) == ["fenced", "won"]
    check = open_store(location)
    assert len(check.snapshot("data", 0)) == 1
    check.close()


def test_unknown_scheme_names_it() -> None:
    with pytest.raises(ValueError, match="unknown scheme 'pg'"):
        open_store("pg://x")
