"""Text a job stored that is not UTF-8 (Spark's ``CAST(value AS STRING)`` keeps a Kafka value's
bytes as they are) is read by every output's reader as ``bytes.decode("utf-8",
errors="replace")`` reads it — the same a mapping's effect says with
``record.value.decode(errors="replace")`` — so it exports and is judged: a Delta table (from
its snapshots and as of its batches; from its change data feed, which delta-rs refuses to read
with such text, through the snapshots), a SQLite database, a Kafka topic."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import polars as pl
import pyarrow as pa
import pytest
from deltalake import CommitProperties, Transaction, write_deltalake

from sealcheck.checkers import run_checkers
from sealcheck.checkers.inputs import RunData
from sealcheck.checkers.schemas import EFFECTS_SCHEMA, TOPIC_SCHEMA, UPDATES_SCHEMA
from sealcheck.core.effects import DeadLetter, Delete, Effects, Record, Upsert
from sealcheck.rundir.effects import write_effects
from sealcheck.rundir.files import TopicRecord, write_topic
from sealcheck.rundir.history import History
from sealcheck.systems.outputs import DeltaOutput, SQLiteOutput, TopicOutput
from sealcheck.systems.outputs.delta_export import _changes
from sealcheck.systems.outputs.rows import Encoder, arrow_rows, text
from tests.runs import final_ops
from tests.unit.test_delta_log import offsets_file

#: one partition, read in two batches of two records: the middle two are not UTF-8
RECORDS = [
    TopicRecord(0, 0, b"k1", b'{"v": 1}'),
    TopicRecord(0, 1, b"k2", b"\xff\xfe1"),  # two bytes that start nothing
    TopicRecord(0, 2, b"k3", b"ab\xe2\x82"),  # a sequence cut short
    TopicRecord(0, 3, b"k1", b'{"v": 2}'),
]
BATCHES = [RECORDS[:2], RECORDS[2:]]


def mapping(record: Record) -> Effects:
    """A JSON value upserts ``v``; anything else is a dead letter keeping the value as text,
    decoded as a user's effect decodes it."""
    if record.value is None:
        return Delete(record.key_text or "")
    try:
        return Upsert(record.key_text or "", {"v": json.loads(record.value)["v"]})
    except ValueError:
        value = record.value.decode(errors="replace")
        return DeadLetter(f"{record.partition}:{record.offset}", {"value": value})


def strings(values: list[bytes]) -> pa.Array:
    """An Arrow string array holding ``values`` as they are (Arrow checks nothing when built
    from buffers; delta-rs writes it as it is, as Spark writes its strings)."""
    offsets = [0]
    for v in values:
        offsets.append(offsets[-1] + len(v))
    bounds = pa.array(offsets, pa.int32()).buffers()[1]
    body = pa.py_buffer(b"".join(values))
    return pa.Array.from_buffers(pa.string(), len(values), [None, bounds, body])


def write_job_tables(root: Path, feed: bool, stored: dict[int, bytes] | None = None) -> None:
    """What a correct job writes for :data:`RECORDS`, batch by batch (each commit tagged with
    its batch by a ``txn``), the dead letters' values as the records' bytes (``stored``: other
    bytes for the dead letter of some offsets), and the checkpoint's offset log."""
    stored = stored or {}
    conf = {"delta.enableChangeDataFeed": "true"} if feed else None
    data: dict[str, int] = {}
    for batch, records in enumerate(BATCHES):
        props = CommitProperties(app_transactions=[Transaction("job", batch)])
        for r in records:
            if r.value is not None and r.value.startswith(b"{"):
                data[(r.key or b"").decode()] = json.loads(r.value)["v"]
        rows = pa.table({"id": list(data), "v": pa.array(list(data.values()), pa.int64())})
        write_deltalake(str(root / "accounts"), rows, mode="overwrite", configuration=conf,
                        commit_properties=props)  # fmt: skip
        bad = [r for r in records if not r.value or not r.value.startswith(b"{")]
        letters = pa.table({
            "id": [f"{r.partition}:{r.offset}" for r in bad],
            "value": strings([stored.get(r.offset, r.value or b"") for r in bad]),
        })  # fmt: skip
        write_deltalake(str(root / "dead_letters"), letters, mode="append", configuration=conf,
                        commit_properties=props)  # fmt: skip
        offsets_file(root, batch, {0: 2 * (batch + 1)})
        commit = root / "checkpoint" / "commits" / str(batch)
        commit.parent.mkdir(parents=True, exist_ok=True)
        commit.write_text('v1\n{"nextBatchWatermarkMs":0}')


def judged(root: Path) -> RunData:
    """The job's tables exported by the real export (a child process) and the run's inputs
    as the checkers read them, the mapping's effects with them."""
    run_dir = root / "run"
    run_dir.mkdir()
    write_topic(RECORDS, run_dir / "topic.parquet")
    write_effects(run_dir / "topic.parquet", mapping, run_dir / "effects.parquet")
    out = DeltaOutput(root / "checkpoint", root / "accounts", "id", root / "dead_letters")
    out.export(run_dir)
    export = run_dir / "export"
    uppers = {c: f["upper"] for c, f in json.loads((export / "frontiers.json").read_text()).items()}
    assert uppers == {"bindings": 2, "data": 2, "errors": 2}
    topic = pl.DataFrame([(r.partition, r.offset, r.key, r.value) for r in RECORDS],
                         schema=TOPIC_SCHEMA, orient="row")  # fmt: skip
    acked = topic.select(pl.lit(0, pl.Int64).alias("time"), "partition", "offset", "key", "value")
    ops = [
        {"index": i, "time": (i + 1) * 1000, "process": "observer", "type": "info", "f": "uppers",
         "value": {"bindings": i + 1, "data": i + 1, "errors": i + 1}}
        for i in range(2)
    ]  # fmt: skip
    ops += final_ops(len(ops), 3000, {0: len(RECORDS)}, acked.height)
    return RunData(
        topic,
        pl.read_parquet(export / "updates.parquet").cast(UPDATES_SCHEMA),
        uppers,
        dict.fromkeys(uppers, 0),
        History(acked, ops),
        asof=pl.read_parquet(export / "asof.parquet"),
        stated=pl.read_parquet(run_dir / "effects.parquet").cast(EFFECTS_SCHEMA),
    )


@pytest.mark.parametrize("feed", [False, True], ids=["snapshots", "change-feed"])
def test_a_delta_table_holding_text_that_is_not_utf8_exports_and_is_judged(
    tmp_path: Path, feed: bool
) -> None:
    write_job_tables(tmp_path, feed)
    if feed:  # delta-rs refuses this change feed: the export reads the snapshots instead
        with pytest.raises(Exception, match="non UTF-8"):
            _changes(tmp_path / "dead_letters")
    run = judged(tmp_path)
    letters = run.updates.filter(pl.col("collection") == "errors")
    assert sorted(zip(letters["key"], letters["value"], letters["ts"], strict=True)) == [
        (b"0:1", '{"value":"\ufffd\ufffd1"}'.encode(), 0),
        (b"0:2", '{"value":"ab\ufffd"}'.encode(), 1),
    ]
    res = run_checkers(run)
    assert res.checkers["as_of"].valid is True  # the tables as of each batch, read the same
    assert res.valid is True, {n: r.word() for n, r in res.checkers.items()}


def test_text_that_differs_from_the_effects_is_still_caught(tmp_path: Path) -> None:
    """A dead letter whose bytes read as other text than the record's (one bad byte where the
    record has two) is INVALID at its batch and key: the reading makes nothing equal."""
    write_job_tables(tmp_path, feed=False, stored={1: b"\xff1"})
    res = run_checkers(judged(tmp_path))
    assert res.valid is False
    first = res.checkers["sealed_state"].anomalies[0]
    assert (first.collection, first.key, first.step) == ("errors", "0:1", 0)


def test_sqlite_text_that_is_not_utf8_is_read_with_replacement(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / "x.db")
    db.execute("CREATE TABLE t (id TEXT PRIMARY KEY, value TEXT)")
    db.execute("INSERT INTO t VALUES ('0:1', CAST(x'fffe31' AS TEXT))")  # as a job may store it
    db.commit()
    out = SQLiteOutput(tmp_path / "x.db", "t", "id")
    assert out.uppers() == {"data": 1, "errors": 1}
    out.export(tmp_path / "run")  # a row that cannot be read fails the export
    seen = out.capture({})
    assert seen is not None and seen.rows == [
        ("data", b"0:1", '{"value":"\ufffd\ufffd1"}'.encode(), 0, 1)
    ]


def test_topic_records_that_are_not_utf8_are_read_with_replacement() -> None:
    raw = TopicOutput("localhost:9092", "out", key="id", value="v")
    as_json = TopicOutput("localhost:9092", "out", key="id")
    record = TopicRecord(0, 0, b"k\xff", b"\xff\xfe1")
    found = raw._row(record, Encoder("id", "v", ()))
    assert found == ("k\ufffd".encode(), "\ufffd\ufffd1".encode())  # the value's text as it is
    doc = TopicRecord(0, 1, b"k", b'{"w": "a\xff"}')
    assert as_json._row(doc, Encoder("id", None, ())) == (b"k", '{"w":"a\ufffd"}'.encode())


def test_nested_text_that_is_not_utf8_is_read_with_replacement() -> None:
    bad = strings([b"ok", b"a\xff"])
    nested = pa.table({
        "s": bad,
        "st": pa.StructArray.from_arrays([bad, pa.array([1, 2])], names=["x", "n"]),
        "l": pa.ListArray.from_arrays(pa.array([0, 1, 2], pa.int32()), bad),
        "m": pa.MapArray.from_arrays(pa.array([0, 1, 2], pa.int32()), bad, bad),
        "b": pa.array([b"\xff", None]),  # binary stays bytes
    })  # fmt: skip
    with pytest.raises(UnicodeDecodeError):
        nested.to_pylist()  # what the export died of
    assert arrow_rows(nested) == [
        {"s": "ok", "st": {"x": "ok", "n": 1}, "l": ["ok"], "m": [("ok", "ok")], "b": b"\xff"},
        {"s": "a\ufffd", "st": {"x": "a\ufffd", "n": 2}, "l": ["a\ufffd"],
         "m": [("a\ufffd", "a\ufffd")], "b": None},
    ]  # fmt: skip
    assert arrow_rows(nested.to_batches()[0]) == arrow_rows(nested)
    assert text(b"\xff\xfe1") == b"\xff\xfe1".decode("utf-8", errors="replace") == "\ufffd\ufffd1"
