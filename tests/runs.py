"""Build checker inputs in memory: a correct run from a list of records, and mutations of it.

The correct run is what a correct pipeline would persist (step by step, with the pipeline's
pure upsert logic), so every checker must call it valid; each mutation seeds one violation.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from sealcheck.checkers.inputs import RunData
from sealcheck.checkers.schemas import TOPIC_SCHEMA, UPDATES_SCHEMA
from sealcheck.rundir.history import History
from sealcheck_upsert_source.loop import choose_range, diff_bindings
from sealcheck_upsert_source.upsert import SourceRecord, apply, upsert_step, winners

Pair = tuple[bytes | None, bytes | None]


def build_run(pairs: Sequence[Pair], partitions: int = 2, step_size: int = 7) -> RunData:
    """Produce ``pairs`` (keys partitioned by hash), seal them in steps of ``step_size``."""
    logs: list[list[SourceRecord]] = [[] for _ in range(partitions)]
    for i, (k, v) in enumerate(pairs):
        p = zlib.crc32(k) % partitions if k is not None else i % partitions
        logs[p].append(SourceRecord(p, len(logs[p]), k, v))
    end = {p: len(log) for p, log in enumerate(logs)}
    rows: list[tuple[str, bytes, bytes, int, int]] = []
    data: dict[bytes, bytes] = {}
    errors: dict[bytes, bytes] = {}
    bound: dict[int, int] = {}
    ops: list[dict[str, Any]] = []
    t = 0
    while True:
        nxt = choose_range(bound, end, step_size)
        if all(o == bound.get(p, 0) for p, o in nxt.items()):
            break
        rows += [("bindings", u.key, u.value, u.ts, u.diff) for u in diff_bindings(bound, nxt, t)]
        recs = [r for p, log in enumerate(logs) for r in log[bound.get(p, 0) : nxt.get(p, 0)]]
        out = upsert_step(winners(recs).values(), data, errors, t)
        rows += [("data", u.key, u.value, u.ts, u.diff) for u in out.data]
        rows += [("errors", u.key, u.value, u.ts, u.diff) for u in out.errors]
        apply(data, out.data)
        apply(errors, out.errors)
        bound = nxt
        t += 1
        ops.append(
            {
                "index": len(ops),
                "time": t * 1000,
                "process": "observer",
                "type": "info",
                "f": "uppers",
                "value": {"bindings": t, "data": t, "errors": t},
            }
        )
    topic = pl.DataFrame(
        [(r.partition, r.offset, r.key, r.value) for log in logs for r in log],
        schema=TOPIC_SCHEMA,
        orient="row",
    )
    acked = topic.select(pl.lit(0, pl.Int64).alias("time"), "partition", "offset", "key", "value")
    updates = pl.DataFrame(rows, schema=UPDATES_SCHEMA, orient="row")
    ops += final_ops(len(ops), t * 1000 + 1, end, acked.height)
    uppers = {"bindings": t, "data": t, "errors": t}
    return RunData(topic, updates, uppers, dict.fromkeys(uppers, 0), History(acked, ops))


def final_ops(index: int, time: int, end: dict[int, int], acks: int) -> list[dict[str, Any]]:
    """What the harness writes last: the log end, caught up, and the inputs op."""
    values = [
        ("log-end", {str(p): o for p, o in end.items()}),
        ("caught-up", {"took_s": 0.0}),
        ("inputs", {"files": {}, "writes": {"ok": acks}}),
    ]
    return [
        {
            "index": index + i,
            "time": time + i,
            "process": "harness",
            "type": "info",
            "f": f,
            "value": v,
        }
        for i, (f, v) in enumerate(values)
    ]


def write_history(
    run_dir: Path,
    records: Sequence[Any],
    uppers: dict[str, int],
    h: Any = None,
    ack_lines: bool = False,
    run_id: str | None = None,
) -> Path:
    """A complete ``history.jsonl`` for a run directory holding its topic and store: every
    record acknowledged (rows of ``acks.arrows``, as the harness writes them), one observation
    of ``uppers``, the final ops — written through the harness's own writer (``h``, one
    already open, e.g. an observer's), so its final op records the files exactly as a run
    does. ``ack_lines``: every acknowledgement an ``ok`` line instead, as in a run stored
    before ``acks.arrows``. ``run_id``: its first op records it, as a run's does."""
    from sealcheck.rundir.history import encode_bytes
    from sealcheck.rundir.history_writer import HistoryWriter, record_inputs
    from sealcheck.rundir.runid import RUN_OP

    path = run_dir / "history.jsonl"
    h = HistoryWriter(path) if h is None else h
    if run_id is not None:
        h.append("harness", "info", RUN_OP, {"id": run_id})
    for r in records:
        if ack_lines:
            value = {**encode_bytes("key", r.key), **encode_bytes("value", r.value)}
            where = {"partition": r.partition, "offset": r.offset}
            h.append("w0", "ok", "write", {**value, **where})
        else:
            h.ack("w0", r.key, r.value, r.partition, r.offset)
    h.append("observer", "info", "uppers", uppers)
    ends: dict[int, int] = {}
    for r in records:
        ends[r.partition] = max(ends.get(r.partition, 0), r.offset + 1)
    h.append("harness", "info", "log-end", {str(p): o for p, o in sorted(ends.items())})
    h.append("harness", "info", "caught-up", {"took_s": 0.0})
    record_inputs(h, run_dir)
    h.close()
    return path


def finish_run_dir(
    run_dir: Path,
    records: Sequence[Any],
    store: str,
    uppers: dict[str, int],
    h: Any = None,
    ack_lines: bool = False,
    run_id: str | None = None,
) -> Path:
    """What the harness leaves at the end of a run: the topic dump, the store's export (by
    the pipeline's descriptor) and a complete history whose final op records both (written
    on with ``h`` when the run's history is already open; ``ack_lines``, ``run_id``: as
    :func:`write_history`). With ``run_id``, ``test.json`` records it first, so every file
    is stamped with it as a run's are (:mod:`sealcheck.rundir.runid`)."""
    from sealcheck.rundir.archive import write_json
    from sealcheck.rundir.files import write_topic
    from sealcheck.rundir.runid import TEST_JSON, TEST_KEY
    from sealcheck.systems.upsert_source.store import export

    if run_id is not None:
        run_dir.mkdir(parents=True, exist_ok=True)
        write_json(run_dir / TEST_JSON, {TEST_KEY: run_id})
    write_topic(list(records), run_dir / "topic.parquet")
    export(store, run_dir)
    write_history(run_dir, records, uppers, h, ack_lines, run_id)
    return run_dir


def stored_run(
    tmp_path: Path,
    seed: int = 11,
    records: int = 400,
    ack_lines: bool = False,
    run_id: str | None = None,
) -> Path:
    """A finished run directory as the harness leaves it, over a real SQLite store written by
    the step loop (``ack_lines``: its acknowledgements in the history, as a run stored before
    ``acks.arrows`` keeps them; ``run_id``: every file stamped with it, as a run's are)."""
    import random

    from sealcheck.harness.run.workload import UpsertMix, upsert_records
    from sealcheck_upsert_source.loop import LoopConfig
    from sealcheck_upsert_source.persist import open_store
    from tests.unit.test_loop import ListSource, catch_up

    src = ListSource(2)
    src.grow(upsert_records(random.Random(seed), records, UpsertMix(keys=50, bad_ratio=0.05)))
    store = open_store(str(tmp_path / "s.db"))
    catch_up(store, src, LoopConfig(max_records_per_step=40))
    uppers = store.uppers()
    store.close()
    db = str(tmp_path / "s.db")
    run = tmp_path / "run"
    return finish_run_dir(run, src.records(), db, uppers, ack_lines=ack_lines, run_id=run_id)


def compacted(
    run: RunData, since: int, collections: Sequence[str], spread: Sequence[bytes] = ()
) -> RunData:
    """``run`` as the pipeline leaves it after compacting ``collections`` (in that order, one
    transaction each, possibly cut short by a crash) to ``since``: as the store does it (issue
    28), their updates below ``since`` merged into one per ``(key, value)`` at ``since - 1``,
    and for ``spread`` keys at ``since - 2`` instead — where an earlier compaction left them,
    as for a key unchanged since — while step ``since`` stays apart."""
    chosen = pl.col("collection").is_in(list(collections))
    below = chosen & (pl.col("ts") < since)
    merged = (
        run.updates.filter(below)
        .group_by("collection", "key", "value")
        .agg(pl.col("diff").sum())
        .filter(pl.col("diff") != 0)
        .with_columns(
            pl.when(pl.col("key").is_in(list(spread)) & pl.lit(since >= 2))
            .then(pl.lit(since - 2))
            .otherwise(pl.lit(since - 1))
            .cast(run.updates.schema["ts"])
            .alias("ts")
        )
        .select(run.updates.columns)
    )
    sinces = {c: (since if c in collections else s) for c, s in run.sinces.items()}
    updates = pl.concat([merged, run.updates.filter(~below)])
    return RunData(run.topic, updates, run.uppers, sinces, run.history)


def with_updates(run: RunData, updates: pl.DataFrame) -> RunData:
    """The same run with other persisted updates."""
    return RunData(run.topic, updates, run.uppers, run.sinces, run.history)
