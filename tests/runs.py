"""Build checker inputs in memory: a correct run from a list of records, and mutations of it.

The correct run is what a correct pipeline would persist (step by step, with the pipeline's
pure upsert logic), so every checker must call it valid; each mutation seeds one violation.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from typing import Any

import polars as pl

from checkers.history import History
from checkers.inputs import TOPIC_SCHEMA, UPDATES_SCHEMA, RunData
from pipeline.loop import choose_range, diff_bindings
from pipeline.upsert import SourceRecord, apply, upsert_step, winners

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
    acked = topic.select("partition", "offset", "key", "value")
    updates = pl.DataFrame(rows, schema=UPDATES_SCHEMA, orient="row")
    uppers = {"bindings": t, "data": t, "errors": t}
    return RunData(topic, updates, uppers, dict.fromkeys(uppers, 0), History(acked, ops))


def with_updates(run: RunData, updates: pl.DataFrame) -> RunData:
    """The same run with other persisted updates."""
    return RunData(run.topic, updates, run.uppers, run.sinces, run.history)
