"""The acknowledged writes beside the history (``acks.arrows``, issue 28): written column-wise
as they arrive, read back as the frame the checkers judge, a stream cut by a crash read up to
its last complete batch, and the file covered by the manifest like every other input — so a
file changed, cut, removed or not listed makes the verdict UNKNOWN, never VALID."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pyarrow as pa
import pytest

from sealcheck.checkers import check_run
from sealcheck.rundir import acks
from sealcheck.rundir.files import ACKS
from sealcheck.rundir.history import History, HistoryError
from sealcheck.rundir.history_writer import HistoryWriter, record_inputs
from tests.runs import stored_run

ROWS = [
    (i, i % 3, i, f"k{i % 50}".encode(), None if i % 7 == 0 else b"\xff%d" % i) for i in range(1000)
]


def written(path: Path, close: bool = True) -> acks.AckWriter:
    """The rows of :data:`ROWS`, 100 per batch (a fake clock that moves past the flush)."""
    now = [0.0]
    writer = acks.AckWriter(path, clock=lambda: now[0])
    for i, row in enumerate(ROWS):
        writer.append(*row)
        if i % 100 == 98:
            now[0] += acks.FLUSH_S
    if close:
        writer.close()
    return writer


def test_rows_read_back_as_written_with_null_and_binary_keys_and_values(tmp_path: Path) -> None:
    written(tmp_path / ACKS)
    table, torn = acks.read(tmp_path / ACKS)
    assert torn == 0 and table.schema.equals(acks.SCHEMA)
    assert list(zip(*table.to_pydict().values(), strict=True)) == ROWS


def test_a_row_waits_at_most_the_flush_interval_before_it_is_in_the_file(tmp_path: Path) -> None:
    now = [0.0]
    writer = acks.AckWriter(tmp_path / ACKS, clock=lambda: now[0])
    writer.append(*ROWS[0])
    assert not (tmp_path / ACKS).exists()  # buffered
    now[0] += acks.FLUSH_S
    writer.append(*ROWS[1])  # the oldest row has waited FLUSH_S: both are written
    assert acks.read(tmp_path / ACKS)[0].num_rows == 2
    writer.close()
    with pytest.raises(ValueError, match="closed"):
        writer.append(*ROWS[2])


def test_a_row_is_written_at_the_next_history_op_once_it_has_waited(tmp_path: Path) -> None:
    now = [0.0]
    h = HistoryWriter(tmp_path / "history.jsonl")
    h.acks = acks.AckWriter(tmp_path / ACKS, clock=lambda: now[0])
    h.ack("w0", b"a", b"1", 0, 0)
    h.append("observer", "info", "uppers", {"data": 0})
    assert not (tmp_path / ACKS).exists()  # not due yet
    now[0] += acks.FLUSH_S
    h.append("observer", "info", "uppers", {"data": 1})  # no acknowledgement since: still due
    assert acks.read(tmp_path / ACKS)[0].num_rows == 1
    h.close()


def test_a_stream_cut_anywhere_reads_its_complete_batches_and_counts_the_rest(
    tmp_path: Path,
) -> None:
    written(tmp_path / ACKS, close=False)  # as a harness killed mid-run leaves it
    data = (tmp_path / ACKS).read_bytes()
    cut = tmp_path / "cut.arrows"
    seen = set()
    for end in [*range(0, len(data), 7), *range(len(data) - 16, len(data) + 1)]:
        cut.write_bytes(data[:end])
        try:
            table, torn = acks.read(cut)
        except pa.ArrowInvalid:  # cut inside the schema: not yet a stream
            assert not seen
            continue
        rows = table.num_rows
        assert list(zip(*table.to_pydict().values(), strict=True)) == ROWS[:rows]
        assert rows % 100 == 0 and 0 <= torn < end
        seen.add(rows)
    assert seen == set(range(0, 1001, 100)) and torn == 0


def test_the_history_reads_its_acks_beside_its_lines_and_counts_them(tmp_path: Path) -> None:
    h = HistoryWriter(tmp_path / "history.jsonl")
    h.append("w0", "invoke", "write", {"key": "a", "value": "1"})
    h.ack("w0", b"a", b"1", 0, 0)
    h.ack("w0", None, b"\x00", 1, 0)
    h.append("observer", "info", "uppers", {"data": 1})
    final = record_inputs(h, tmp_path)
    h.close()
    assert final["value"]["files"][ACKS]["rows"] == 2 and final["value"]["writes"]["ok"] == 2
    lines = (tmp_path / "history.jsonl").read_text().splitlines()
    assert [json.loads(x)["type"] for x in lines] == ["invoke", "info", "info"]  # no ok lines
    history = History.load(tmp_path / "history.jsonl")
    acked = history.acked.lazy().collect()
    assert acked.select("partition", "offset", "key", "value").rows() == [
        (0, 0, b"a", b"1"),
        (1, 0, None, b"\x00"),
    ]
    assert acked["time"].is_sorted() and history.problems() == []
    assert history.written_acks() == 2
    # read apart (load_run reads acks.arrows in a thread beside the other files), and once
    later = History.load(tmp_path / "history.jsonl", acks=False)
    assert later.acked.lazy().collect().height == 0 and later.ops == history.ops
    assert later.with_ack_file().with_ack_file() is later
    assert later.acked.lazy().collect().equals(acked)
    good = (tmp_path / ACKS).read_bytes()
    (tmp_path / ACKS).write_bytes(b"not arrow")
    again = History.load(tmp_path / "history.jsonl", acks=False)
    with pytest.raises(HistoryError):
        again.with_ack_file()
    (tmp_path / ACKS).write_bytes(good)  # a failed read is not taken for a read one
    assert again.with_ack_file().acked.lazy().collect().equals(acked)


def test_an_ack_after_the_run_ended_is_a_line_after_the_final_op(tmp_path: Path) -> None:
    h = HistoryWriter(tmp_path / "history.jsonl")
    h.ack("w0", b"a", b"1", 0, 0)
    record_inputs(h, tmp_path)
    h.ack("w0", b"b", b"2", 0, 1)  # a late delivery report: not lost, and not judged
    h.close()
    history = History.load(tmp_path / "history.jsonl")
    assert history.after_final > 0 and "after the final op" in history.problems()[0]


def test_a_history_written_before_acks_arrows_still_reads_its_ok_lines(tmp_path: Path) -> None:
    h = HistoryWriter(tmp_path / "history.jsonl")
    h.append("w0", "ok", "write", {"key": "a", "value": "1", "partition": 0, "offset": 0})
    h.close()
    acked = History.load(tmp_path / "history.jsonl").acked.lazy().collect()
    assert acked.select("key", "offset").rows() == [(b"a", 0)]
    assert not (tmp_path / ACKS).exists()


def test_a_file_that_is_not_a_stream_of_acks_is_an_unusable_history(tmp_path: Path) -> None:
    run_dir = stored_run(tmp_path, run_id="r")
    (run_dir / ACKS).write_bytes(b"not arrow")
    res = check_run(run_dir)
    assert res.valid is None and res.checkers == {}  # no manifest then: it proves nothing
    said = f"{run_dir / ACKS}: not a stream of acknowledged writes"
    assert any(said in p for p in res.input_problems), res.input_problems
    assert res.input_problems[0].startswith(f"{ACKS} cannot be read (ArrowInvalid")


@pytest.mark.parametrize("change", ["one row fewer", "cut", "removed", "unlisted"])
def test_acks_changed_after_the_run_are_unknown_naming_the_file(
    tmp_path: Path, change: str
) -> None:
    run_dir = stored_run(tmp_path)
    path = run_dir / ACKS
    assert check_run(run_dir).valid is True
    table, _ = acks.read(path)
    if change == "one row fewer":  # a whole stream, one acknowledgement short
        with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_stream(sink, acks.SCHEMA) as out:
            out.write_table(table.slice(1))
    elif change == "cut":
        path.write_bytes(path.read_bytes()[:-100])
    elif change == "removed":
        path.unlink()
    else:  # the manifest does not list it
        history = run_dir / "history.jsonl"
        ops = [json.loads(line) for line in history.read_text().splitlines()]
        del ops[-1]["value"]["files"][ACKS]
        history.write_text("".join(json.dumps(op) + "\n" for op in ops))
    res = check_run(run_dir)
    assert res.valid is None, res.to_json()
    assert any(ACKS in p for p in res.input_problems), res.input_problems


def test_a_lost_acknowledged_write_is_caught_from_acks_arrows(tmp_path: Path) -> None:
    """The seeded violation: the history acknowledges a write the topic does not hold (and
    the manifest records the file so): Kafka's loss, caught by ``completeness``."""
    run_dir = stored_run(tmp_path)
    path = run_dir / ACKS
    table, _ = acks.read(path)
    extra = pa.table(
        {"time": [1], "partition": [0], "offset": [10**6], "key": [b"k"], "value": [b"{}"]},
        schema=acks.SCHEMA,
    )
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_stream(sink, acks.SCHEMA) as out:
        out.write_table(pa.concat_tables([table, extra]))
    history = run_dir / "history.jsonl"
    ops = [json.loads(line) for line in history.read_text().splitlines()]
    from sealcheck.rundir.files import describe

    ops[-1]["value"]["files"] = describe(run_dir)
    ops[-1]["value"]["writes"]["ok"] += 1
    history.write_text("".join(json.dumps(op) + "\n" for op in ops))
    res = check_run(run_dir)
    assert res.valid is False and res.checkers["completeness"].valid is False, res.to_json()
    assert res.checkers["completeness"].anomaly_counts.get("kafka-lost-write") == 1


def test_a_harness_killed_mid_run_is_unknown_judging_the_batches_it_wrote(
    tmp_path: Path,
) -> None:
    """Both files cut as a kill leaves them: the history before its final op, the stream
    inside its third batch. The complete batches are judged; the verdict is UNKNOWN, saying
    the history did not reach its final op and how many bytes of acks were not read."""
    from sealcheck.rundir.runid import stamp_schema

    run_dir = stored_run(tmp_path, run_id="r")  # every file of its run: judged
    path = run_dir / ACKS
    table, _ = acks.read(path)
    with pa.OSFile(str(path), "wb") as sink:  # 100 rows a batch, never closed
        out = pa.ipc.new_stream(sink, stamp_schema(acks.SCHEMA, run_dir))
        out.write_table(table, max_chunksize=100)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) * 5 // 8])  # inside the third of four batches
    history = run_dir / "history.jsonl"
    history.write_text("".join(history.read_text().splitlines(keepends=True)[:-1]))
    res = check_run(run_dir)
    assert res.valid is None
    assert "without the harness's final 'inputs' op" in " ".join(res.input_problems)
    assert any("after its last complete record batch" in p for p in res.input_problems)
    completeness = res.checkers["completeness"]
    assert completeness.counts["acknowledged_writes_checked"] == 200
    assert completeness.valid is None


def test_the_file_s_columns_are_the_frame_the_checkers_read() -> None:
    """``acks.SCHEMA`` is spelled in Arrow beside the polars ``BYTES_SCHEMA`` the checkers
    read (Arrow's ``binary``, not the ``large_binary`` polars would write): kept equal here."""
    from sealcheck.rundir.schema import BYTES_SCHEMA

    assert pl.from_arrow(acks.SCHEMA.empty_table()).schema == BYTES_SCHEMA
