"""``versions`` checker benchmark (issue 53): what judging a release's own column in every state
costs (:mod:`sealcheck.checkers.versions`, :mod:`sealcheck.checkers.version_states`), beside
its peer measured in the same run on the same inputs — ``prefix``, which judges every state of
the other columns. A correct run of a job whose release 2 adds ``tier``, into an output
observed from outside (no bindings): release 1 writes the first half of the states, release 2
the rest; written as the harness writes a run (topic, each version's effects, export, split).
Prints seconds, the ratio and peak memory; asserts nothing.

    .venv/bin/python bench/versions_checker_bench.py [--records 300000] [--keys 30000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from sealcheck import Delete, Job, JobRun, Record, SQLiteOutput, Upsert
from sealcheck.checkers import CHECKERS
from sealcheck.checkers.inputs import RunData
from sealcheck.checkers.schemas import EFFECTS_SCHEMA, TOPIC_SCHEMA, UPDATES_SCHEMA
from sealcheck.core.effects import encode_key, encode_row
from sealcheck.rundir.files import (
    UPDATES,
    VERSION_EFFECTS,
    VERSIONED,
    TopicRecord,
    write_export,
    write_topic,
)
from sealcheck.rundir.history import VERSION, History
from sealcheck.rundir.names import SUT_EXIT, SUT_START
from sealcheck.rundir.version_effects import held_columns, split_export, write_version_effects

PARTITIONS = 2


def tier(n: int) -> str:
    """Release 2's new column."""
    return "even" if n % 2 == 0 else "odd"


@dataclass(frozen=True)
class Accounts(Job):
    """A job whose release 2 adds ``tier``."""

    name = "accounts"
    versions = ("v1", "v2")

    def command(self, run: JobRun) -> list[str]:
        """Never run: the bench writes the run itself."""
        return ["job"]

    def output(self, run: JobRun) -> SQLiteOutput:
        """Never read: the bench writes the export itself."""
        return SQLiteOutput(run.dir / "db", "accounts", "id")

    def effect(self, record: Record, version: str = "v1") -> Upsert | Delete:
        """``amount``; release 2 adds ``tier``."""
        key = (record.key or b"").decode()
        n = json.loads(record.value or b"{}")["v"]
        row: dict[str, Any] = {"amount": n, **({"tier": tier(n)} if version == "v2" else {})}
        return Upsert(key, row)


def write_run(d: Path, records: int, keys: int, step: int) -> None:
    """A correct run into ``d``: ``records`` upserts over ``keys`` keys, ``step`` records a
    step, release 1 then release 2."""
    rng = random.Random(1)
    recs = [
        TopicRecord(i % PARTITIONS, i // PARTITIONS, f"k{rng.randrange(keys)}".encode(),
                    json.dumps({"v": i}).encode())
        for i in range(records)
    ]  # fmt: skip
    write_topic(recs, d / "topic.parquet")
    versions = Accounts().version_effects()
    assert versions is not None
    write_version_effects(d / "topic.parquet", versions, d / "effects.parquet", d / VERSION_EFFECTS)
    rows: list[tuple[str, bytes, bytes, int, int]] = []
    table: dict[bytes, bytes] = {}
    ops: list[dict[str, Any]] = []

    def op(f: str, value: dict[str, Any], process: str = "harness") -> None:
        ops.append({"index": len(ops), "time": (len(ops) + 1) * 1000, "process": process,
                    "type": "info", "f": f, "value": value})  # fmt: skip

    steps = (records + step - 1) // step
    for ts in range(steps):
        version = "v1" if ts < steps // 2 else "v2"
        if ts in (0, steps // 2):
            if ts:
                op(SUT_EXIT, {"incarnation": 0, "code": 0})
            inc = 0 if ts == 0 else 1
            op(VERSION, {"incarnation": inc, "version": version})
            op(SUT_START, {"incarnation": inc})
        for r in recs[ts * step : (ts + 1) * step]:
            key, n = encode_key((r.key or b"").decode()), json.loads(r.value or b"{}")["v"]
            new = encode_row({"amount": n, **({"tier": tier(n)} if version == "v2" else {})})
            if key in table:
                rows.append(("data", key, table[key], ts, -1))
            rows.append(("data", key, new, ts, 1))
            table[key] = new
        op("uppers", {"data": ts + 1, "errors": ts + 1}, "observer")
    uppers = {"data": steps, "errors": steps}
    frontiers: dict[str, dict[str, Any]] = {c: {"upper": u, "since": 0} for c, u in uppers.items()}
    frontiers["bindings"] = {"upper": 0, "since": 0, "kept": False}
    write_export(d, frontiers, [rows])
    split_export(d, ("tier",))
    end = {p: (records + PARTITIONS - 1 - p) // PARTITIONS for p in range(PARTITIONS)}
    last: list[tuple[str, dict[str, Any]]] = [
        ("log-end", {str(p): o for p, o in end.items()}),
        ("caught-up", {"took_s": 0.0}),
        ("inputs", {"files": {}, "writes": {"ok": records}}),
    ]
    for f, v in last:
        op(f, v)
    (d / "ops.json").write_bytes(json.dumps(ops).encode())
    (d / "uppers.json").write_text(json.dumps(uppers))


def load(d: Path) -> RunData:
    """The run as the checkers read it (nothing derived yet)."""
    topic = pl.read_parquet(d / "topic.parquet").cast(TOPIC_SCHEMA)
    uppers = json.loads((d / "uppers.json").read_text())
    acked = topic.select(pl.lit(0, pl.Int64).alias("time"), "partition", "offset", "key", "value")
    return RunData(
        topic,
        pl.read_parquet(d / UPDATES).cast(UPDATES_SCHEMA),
        uppers,
        dict.fromkeys(uppers, 0),
        History(acked, json.loads((d / "ops.json").read_bytes())),
        stated=pl.read_parquet(d / "effects.parquet").cast(EFFECTS_SCHEMA),
        version_effects=pl.read_parquet(d / VERSION_EFFECTS),
        versioned=pl.read_parquet(d / VERSIONED),
        versioned_held=held_columns(d / VERSIONED),
        unkept=frozenset({"bindings"}),
    )


def timed(name: str, d: Path) -> tuple[float, Any]:
    """Seconds checker ``name`` took on a fresh load of the run, and its result."""
    run = load(d)
    start = time.perf_counter()
    res = CHECKERS[name](run)
    return time.perf_counter() - start, res


def main() -> None:
    """Write the run once, time both checkers ``--repeat`` times, print the medians."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--records", type=int, default=300_000)
    p.add_argument("--keys", type=int, default=30_000)
    p.add_argument("--step", type=int, default=2_000, help="records a step")
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        write_run(d, args.records, args.keys, args.step)
        mine, peer = [], []
        for _ in range(args.repeat):
            s, res = timed("versions", d)
            mine.append(s)
            peer.append(timed("prefix", d)[0])
        states = res.counts.get("earlier_states_judged", 0)
    v, q = statistics.median(mine), statistics.median(peer)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"records: {args.records:,} over {args.keys:,} keys, {args.step:,} a step; "
          f"median of {args.repeat}")  # fmt: skip
    print(f"prefix (peer):  {q:.2f} s")
    print(f"versions:       {v:.2f} s ({states:,} earlier states judged; {res.word()})")
    print(f"versions / prefix: {v / q:.2f}x; peak RSS {peak:,.0f} MB")


if __name__ == "__main__":
    main()
