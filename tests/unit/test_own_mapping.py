"""A system that writes rows of its own shape (JSON parsed into columns, tombstones deleted,
unparseable records sent to a dead-letter table under their position, null keys skipped) is
judged against its own mapping of records to effects: valid when it writes what the mapping
says, each seeded violation caught at its key and step, and never judged by the built-in
record encoding instead."""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path

import polars as pl
import pytest

from sealcheck.checkers import CHECKERS, run_checkers
from sealcheck.checkers.inputs import RunData
from sealcheck.checkers.replay import assign_steps, binding_ranges
from sealcheck.checkers.schemas import EFFECTS_SCHEMA, TOPIC_SCHEMA, UPDATES_SCHEMA
from sealcheck.core.effects import (
    SKIP,
    DeadLetter,
    Delete,
    Effect,
    EffectError,
    Effects,
    Record,
    Upsert,
    effects_of,
    encode_key,
    encode_row,
)
from sealcheck.rundir.effects import write_effects
from sealcheck.rundir.files import TopicRecord, write_topic
from sealcheck.rundir.history import History
from sealcheck_upsert_source.loop import choose_range, diff_bindings
from tests.runs import final_ops


def mapping(record: Record) -> Effects:
    """A job of the kind users write: the JSON value parsed into columns."""
    if record.key is None:
        return SKIP
    if record.value is None:
        return Delete(record.key_text or "")
    try:
        doc = json.loads(record.value)
    except ValueError:
        return DeadLetter(f"{record.partition}:{record.offset}", {"offset": record.offset})
    return Upsert(record.key_text or "", {"amount": float(doc["v"]), "who": doc.get("w")})


PAIRS: list[tuple[bytes | None, bytes | None]] = [
    (b"a", b'{"v": 1}'),
    (b"b", b'{"v": 2, "w": "x"}'),
    (None, b'{"v": 3}'),
    (b"a", b'{"v": 4}'),
    (b"c", b"{bad"),
    (b"b", None),
    (b"c", b'{"v": 5}'),
    (b"d", b'{"v": 6}'),
    (b"a", None),
    (b"e", b'{"v": 7.5}'),
    (b"d", b'{"v": 8}'),
] * 3

Job = Callable[[Record], Sequence[Effect]]


def correct(record: Record) -> Sequence[Effect]:
    return effects_of(mapping(record))


def run_of(
    tmp: Path, job: Job = correct, partitions: int = 2, step: int = 4, stated: bool = True
) -> RunData:
    """What ``job`` writes, step by step (the last record of a key in a step wins), with
    the mapping's effects as the harness writes them."""
    logs: list[list[TopicRecord]] = [[] for _ in range(partitions)]
    for i, (k, v) in enumerate(PAIRS):
        p = zlib.crc32(k) % partitions if k is not None else i % partitions
        logs[p].append(TopicRecord(p, len(logs[p]), k, v))
    records = [r for log in logs for r in log]
    write_topic(records, tmp / "topic.parquet")
    write_effects(tmp / "topic.parquet", mapping, tmp / "effects.parquet")
    end = {p: len(log) for p, log in enumerate(logs)}
    rows: list[tuple[str, bytes, bytes, int, int]] = []
    state: dict[tuple[str, bytes], bytes] = {}
    bound: dict[int, int] = {}
    t = 0
    while True:
        nxt = choose_range(bound, end, step)
        if all(o == bound.get(p, 0) for p, o in nxt.items()):
            break
        rows += [("bindings", u.key, u.value, u.ts, u.diff) for u in diff_bindings(bound, nxt, t)]
        last: dict[tuple[str, bytes], bytes | None] = {}
        for r in records:
            if bound.get(r.partition, 0) <= r.offset < nxt[r.partition]:
                for e in job(Record(r.partition, r.offset, r.key, r.value)):
                    value = None if isinstance(e, Delete) else encode_row(e.row)
                    last[(e.table, encode_key(e.key))] = value
        for (table, key), value in sorted(last.items()):
            old = state.get((table, key))
            if old == value:
                continue
            if old is not None:
                rows.append((table, key, old, t, -1))
            if value is not None:
                rows.append((table, key, value, t, 1))
                state[(table, key)] = value
            else:
                state.pop((table, key), None)
        bound, t = nxt, t + 1
    topic = pl.DataFrame(
        [(r.partition, r.offset, r.key, r.value) for r in records],
        schema=TOPIC_SCHEMA,
        orient="row",
    )
    acked = topic.select(pl.lit(0, pl.Int64).alias("time"), "partition", "offset", "key", "value")
    ops = [
        {"index": i, "time": (i + 1) * 1000, "process": "observer", "type": "info", "f": "uppers",
         "value": {"bindings": i + 1, "data": i + 1, "errors": i + 1}}
        for i in range(t)
    ]  # fmt: skip
    ops += final_ops(len(ops), t * 1000 + 1, end, acked.height)
    uppers = {"bindings": t, "data": t, "errors": t}
    effects = pl.read_parquet(tmp / "effects.parquet").cast(EFFECTS_SCHEMA) if stated else None
    updates = pl.DataFrame(rows, schema=UPDATES_SCHEMA, orient="row")
    return RunData(
        topic,
        updates,
        uppers,
        dict.fromkeys(uppers, 0),
        History(acked, ops),
        stated=effects,
    )


def verdicts(run: RunData) -> dict[str, object]:
    out = run_checkers(run).checkers
    return {n: r.valid if r.applicable else r.word() for n, r in out.items()}


def test_a_job_that_writes_what_its_mapping_says_is_valid(tmp_path: Path) -> None:
    run = run_of(tmp_path)
    assert verdicts(run) == {
        **dict.fromkeys(CHECKERS, True),
        "as_of": "not applicable",
        "versions": "not applicable",
    }
    assert run.collection("errors").height > 0  # the dead letters were judged too


def test_the_same_output_is_invalid_by_the_built_in_encoding(tmp_path: Path) -> None:
    """Without the mapping the parsed rows are not the records' values: the mapping is what
    made the run valid, not a checker that cannot fail."""
    found = verdicts(run_of(tmp_path, stated=False))
    assert found["sealed_state"] is False and found["no_phantoms"] is False


def keeps_deleted(record: Record) -> Sequence[Effect]:
    """The one-line bug users write: the MERGE has no delete clause."""
    return [e for e in correct(record) if not isinstance(e, Delete)]


def test_a_job_that_ignores_tombstones_is_caught_at_the_first_delete(tmp_path: Path) -> None:
    run = run_of(tmp_path, keeps_deleted)
    res = run_checkers(run)
    assert res.checkers["sealed_state"].valid is False
    assert res.checkers["completeness"].valid is False
    first = res.checkers["sealed_state"].anomalies[0]
    # the first step that bound a tombstone of a key holding a value, and its keys
    ranges = binding_ranges(run.collection("bindings"), run.uppers["data"])
    steps = assign_steps(run.classified(), ranges).to_list()
    held: set[bytes] = set()
    deleted: dict[int, set[str]] = {}
    for i, r in enumerate(run.topic.iter_rows(named=True)):
        if r["key"] is not None and r["value"] is None and r["key"] in held:
            deleted.setdefault(steps[i], set()).add(r["key"].decode())
        elif r["key"] is not None:
            held.add(r["key"])
    at = min(deleted)
    assert (first.collection, first.step) == ("data", at)
    assert first.key in deleted[at]
    assert "should have been retracted" in first.detail


def drops_dead_letters(record: Record) -> Sequence[Effect]:
    return [e for e in correct(record) if e.table != "errors"]


def test_a_lost_dead_letter_is_caught_in_errors(tmp_path: Path) -> None:
    res = run_checkers(run_of(tmp_path, drops_dead_letters)).checkers
    assert res["sealed_state"].valid is False
    assert {a.collection for a in res["sealed_state"].anomalies} == {"errors"}
    first = res["sealed_state"].anomalies[0]
    assert first.key == "{}:{}".format(*_first_bad(PAIRS))  # the dead letter's own key
    assert first.expected["value"] == '{"offset":' + str(_first_bad(PAIRS)[1]) + "}"


def _first_bad(pairs: Sequence[tuple[bytes | None, bytes | None]]) -> tuple[int, int]:
    """Partition and offset of the first record the mapping sends to the dead letters."""
    offsets = [0, 0]
    for i, (k, v) in enumerate(pairs):
        p = zlib.crc32(k) % 2 if k is not None else i % 2
        if k is not None and v is not None and not v.startswith(b'{"'):
            return p, offsets[p]
        offsets[p] += 1
    raise AssertionError("no bad record")


def invents(record: Record) -> Sequence[Effect]:
    found = list(correct(record))
    if record.key == b"d":
        found = [Upsert("d", {"amount": 99.0, "who": "nobody"})]
    return found


def test_a_value_no_record_puts_there_is_a_phantom(tmp_path: Path) -> None:
    res = run_checkers(run_of(tmp_path, invents)).checkers
    assert res["no_phantoms"].valid is False
    assert res["no_phantoms"].anomalies[0].key == "d"
    assert "99" in str(res["no_phantoms"].anomalies[0].found)


def test_rows_compare_by_value_not_by_type_spelling() -> None:
    """A DOUBLE column read back as 2.0 equals the mapping's 2; times and decimals as text."""
    import datetime as dt
    import decimal

    assert encode_row({"a": 2.0, "b": "x"}) == encode_row({"b": "x", "a": 2})
    assert encode_row({"d": decimal.Decimal("3.50")}) == encode_row({"d": decimal.Decimal("3.5")})
    when = dt.datetime(2026, 1, 2, 3, 4, 5)
    assert encode_row({"t": when}) == b'{"t":"2026-01-02T03:04:05"}'
    assert encode_key(("a", 1)) == b'["a",1]' and encode_key(7) == b"7"


def test_a_mapping_that_fails_names_the_record(tmp_path: Path) -> None:
    write_topic([TopicRecord(0, 0, b"k", b'{"v": 1}'), TopicRecord(0, 1, b"k", b"{}")],
                tmp_path / "t.parquet")  # fmt: skip
    with pytest.raises(EffectError, match=r"partition 0 offset 1 .*KeyError"):
        write_effects(tmp_path / "t.parquet", mapping, tmp_path / "e.parquet")
    assert not (tmp_path / "e.parquet").exists()

    def wrong(record: Record) -> Effects:
        return "upsert"  # type: ignore[return-value]

    with pytest.raises(EffectError, match=r"offset 0 .*'upsert' \(str\) is not an effect"):
        write_effects(tmp_path / "t.parquet", wrong, tmp_path / "e.parquet")

    def number(record: Record) -> Effects:
        return 42  # type: ignore[return-value]

    with pytest.raises(EffectError) as info:  # named, not "'int' object is not iterable"
        write_effects(tmp_path / "t.parquet", number, tmp_path / "e.parquet")
    assert str(info.value) == (
        "the mapping's effect of record partition 0 offset 0 (key b'k'): 42 (int) is not an "
        "effect: return Upsert(key, row), Delete(key), DeadLetter(key, row), a list of them, "
        "or SKIP"
    )
