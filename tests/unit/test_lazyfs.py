"""The lazy filesystem's page bookkeeping (sealcheck.infra.lazy_pages.LazyState) on plain
files: what is written is read back, fsync makes it durable, a drop loses exactly what was not
fsynced."""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from sealcheck.infra.lazyfs import PAGE, LazyState


def _open(state: LazyState, name: str) -> int:
    return os.open(state.real(name), os.O_RDWR | os.O_CREAT, 0o644)


def test_writes_are_read_back_but_reach_the_disk_only_when_fsynced(tmp_path: Path) -> None:
    state = LazyState(str(tmp_path))
    fd = _open(state, "/f")
    state.write("/f", fd, b"durable", 0)
    state.fsync("/f", fd)
    state.write("/f", fd, b"LOST", 3)
    state.write("/f", fd, b"tail", PAGE * 2 + 5)  # a hole, then a new last page
    seen = state.read("/f", fd, PAGE * 3, 0)
    assert seen[:7] == b"durLOST" and seen[PAGE * 2 + 5 :] == b"tail"
    assert state.size("/f") == PAGE * 2 + 9
    assert (tmp_path / "f").read_bytes() == b"durable"  # nothing un-fsynced on disk
    lost = state.drop()
    assert lost["files"] == 1 and lost["bytes"] > 0 and lost["paths"] == ["/f"]
    assert state.read("/f", fd, 100, 0) == b"durable" and state.size("/f") == 7
    os.close(fd)


def test_fsync_persists_a_truncation_and_a_drop_undoes_one(tmp_path: Path) -> None:
    state = LazyState(str(tmp_path))
    fd = _open(state, "/f")
    state.write("/f", fd, b"x" * (PAGE + 10), 0)
    state.fsync("/f", fd)
    state.truncate("/f", fd, 5)
    assert state.read("/f", fd, PAGE * 2, 0) == b"xxxxx"
    state.drop()
    assert state.size("/f") == PAGE + 10  # the truncation was never fsynced
    state.truncate("/f", fd, 5)
    state.write("/f", fd, b"y", 8)  # extending after a truncate reads zeros in between
    assert state.read("/f", fd, 100, 0) == b"xxxxx\0\0\0y"
    state.fsync("/f", fd)
    assert (tmp_path / "f").read_bytes() == b"xxxxx\0\0\0y"
    assert state.counters()["kept_files"] == 0
    os.close(fd)


def test_shared_memory_files_pass_through_and_renames_carry_pages(tmp_path: Path) -> None:
    state = LazyState(str(tmp_path))
    fd = _open(state, "/db-shm")
    state.write("/db-shm", fd, b"index", 0)
    assert (tmp_path / "db-shm").read_bytes() == b"index"  # never kept, never lost
    for name in ("/00000000000000000000.index", "/00000000000000000000.timeindex"):  # Kafka's
        state.write(name, _open(state, name), b"mmapped", 0)
        assert (tmp_path / name.lstrip("/")).read_bytes() == b"mmapped"
    assert not state.passthrough("/00000000000000000000.log")  # the log itself is lazy
    other = _open(state, "/a")
    state.write("/a", other, b"moved", 0)
    os.rename(state.real("/a"), state.real("/b"))
    state.rename("/a", "/b")
    assert state.read("/b", other, 10, 0) == b"moved"
    state.forget("/b")
    assert state.counters()["kept_files"] == 0
    os.close(fd)
    os.close(other)


@settings(max_examples=300, deadline=None)
@given(
    ops=st.lists(
        st.tuples(
            st.sampled_from(["write", "truncate", "fsync"]),
            st.integers(0, 3 * PAGE),
            st.binary(min_size=1, max_size=PAGE + 100),
        ),
        max_size=12,
    )
)
def test_reads_equal_a_model_file_and_a_drop_returns_to_the_last_fsync(
    ops: list[tuple[str, int, bytes]],
) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as root:
        state = LazyState(root)
        fd = _open(state, "/f")
        model, durable = bytearray(), b""
        for op, at, data in ops:
            if op == "write":
                state.write("/f", fd, data, at)
                model.extend(b"\0" * max(0, at + len(data) - len(model)))
                model[at : at + len(data)] = data
            elif op == "truncate":
                state.truncate("/f", fd, at)
                model = model[:at] + bytearray(b"\0" * max(0, at - len(model)))
            else:
                state.fsync("/f", fd)
                durable = bytes(model)
            assert state.read("/f", fd, len(model) + PAGE, 0) == bytes(model)
        state.drop()
        assert state.read("/f", fd, len(durable) + PAGE, 0) == durable
        assert Path(root, "f").read_bytes() == durable
        os.close(fd)
