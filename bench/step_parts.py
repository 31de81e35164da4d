"""Where a step's Spark read spends its time: the pipeline's read of one offset range
(:meth:`sealcheck_upsert_source.source.KafkaSparkSource.read_winners`) split into parts, at
several range sizes, through Spark Connect (the pipeline's default) and in local mode without
Connect.

    .venv/bin/python bench/step_parts.py [--sizes 2000,20000,100000] [--reps 5] [--keys 10000]
        [--modes connect,local] [--work /tmp/step-parts] [--json PATH]

One local broker, one topic of 3 partitions holding the largest size's seeded upserts. Each
size reads about the first ``size`` records (each partition's share of them). Each part is
timed ``--reps`` times after one warm-up; the table gives the median in ms:

* **empty query**: ``SELECT 1`` to Arrow — the round trip of any query (the floor);
* **plan**: the range's DataFrame built and analysed (``.schema``: Connect's AnalyzePlan;
  local: the analyser), nothing run;
* **3 tasks**: ``spark.range(3, numPartitions=3).count()`` — scheduling a job of as many
  tasks as the read has partitions, with no Kafka;
* **fetch**: ``count()`` of the range — the job, a Kafka consumer per task, the fetch;
* **to Arrow**: the range's records to Arrow in Python (what the pipeline's job returns);
* **winners**: each raw key's winner chosen from that Arrow table, column-wise
  (:func:`~sealcheck_upsert_source.source.winners_table`);
* **decode**: the winners to the pipeline's Python records;
* **read**: :meth:`~sealcheck_upsert_source.source.KafkaSparkSource.read_winners`, the whole
  read as the pipeline runs it;
* **Spark winners**: the read as it was before issue 28 — the winners chosen in Spark
  (``groupBy`` + ``max_by``, one more stage: a shuffle) and only they sent as Arrow — the peer
  the read is compared with, timed in the same session.

Each mode runs in a child process of its own (a
Connect client and a local driver do not share an interpreter). Prints the table; asserts
nothing.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sealcheck.harness.cli import smoke  # noqa: E402
from sealcheck.harness.run.workload import UpsertMix, upsert_records  # noqa: E402
from sealcheck.infra.local import LocalBackend  # noqa: E402
from sealcheck.infra.topic import log_end  # noqa: E402

TOPIC = "parts"
PARTS = (
    "empty query",
    "plan",
    "3 tasks",
    "fetch",
    "to Arrow",
    "winners",
    "decode",
    "read",
    "Spark winners",
)


def timed(fn: Callable[[], Any], reps: int) -> float:
    """The median of ``reps`` timings of ``fn`` (ms), after one warm-up call."""
    fn()
    out = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000)
    return statistics.median(out)


def child(
    mode: str, bootstrap: str, url: str, sizes: list[int], reps: int, ends: dict[int, int]
) -> dict[str, Any]:
    """Time every part at every size in one session of ``mode``."""
    from sealcheck.infra.jars import spark_connector_jars
    from sealcheck_upsert_source.source import KafkaSparkSource
    from sealcheck_upsert_source.spark import remote_session, spark_session

    jars = [str(j) for j in spark_connector_jars()]
    spark = remote_session(url) if mode == "connect" else spark_session(jars)
    source = KafkaSparkSource(bootstrap, TOPIC, spark)
    rows: dict[str, Any] = {}
    for size in sizes:
        total = sum(ends.values())
        end = {p: e * size // total for p, e in ends.items()}  # each partition's share
        got = parts(spark, source, end, reps)
        rows[str(size)] = got
        print(f"{mode} {size}: {json.dumps({k: round(v, 1) for k, v in got.items()})}", flush=True)
    source.close()
    return rows


def parts(spark: Any, source: Any, end: dict[int, int], reps: int) -> dict[str, Any]:
    """Every part's median time (ms) for the range from offset 0 to ``end``."""
    from sealcheck_upsert_source.source import decode, winners_table

    def records() -> Any:
        return source.range_frame({}, end).select("key", "partition", "offset", "value")

    fetched = records().toArrow()
    best = winners_table(fetched)
    got: dict[str, Any] = {
        "empty query": timed(lambda: spark.sql("SELECT 1 AS x").toArrow(), reps),
        "plan": timed(lambda: records().schema, reps),
        "3 tasks": timed(lambda: spark.range(0, 3, 1, 3).count(), reps),
        "fetch": timed(lambda: source.range_frame({}, end).count(), reps),
        "to Arrow": timed(lambda: records().toArrow(), reps),
        "winners": timed(lambda: winners_table(fetched), reps),
        "decode": timed(lambda: decode(best), reps),
        "read": timed(lambda: source.read_winners({}, end), reps),
        "Spark winners": timed(lambda: spark_winners(source.range_frame({}, end)).toArrow(), reps),
    }
    got["winners kept"] = best.num_rows
    return got


def spark_winners(frame: Any) -> Any:
    """The winners chosen in Spark, as the read did before issue 28 (the peer)."""
    from pyspark.sql import functions as F

    slot = F.when(F.col("key").isNull(), F.col("partition")).otherwise(F.lit(-1))
    return (
        frame.groupBy("key", slot.alias("null_partition"))
        .agg(
            F.max_by(
                F.struct("partition", "offset", "value"), F.struct("offset", "partition")
            ).alias("w")
        )
        .select("key", "w.partition", "w.offset", "w.value")
    )


def table(results: dict[str, dict[str, Any]]) -> str:
    """The results as a Markdown table: one row per mode and size."""
    cols = list(PARTS)
    lines = ["| mode | records | winners | " + " | ".join(cols) + " |"]
    lines.append("| --- " * (len(cols) + 3) + "|")
    for mode, by_size in results.items():
        for size, got in by_size.items():
            cells = " | ".join(f"{got[c]:,.0f}" for c in cols)
            lines.append(f"| {mode} | {int(size):,} | {got['winners kept']:,} | {cells} |")
    return "\n".join(lines)


def main() -> int:
    """Produce the topic, run each mode in a child process, print the table."""
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sizes", default="2000,20000,100000")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--keys", type=int, default=10_000)
    ap.add_argument("--modes", default="connect,local")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--work", type=Path, default=Path("/tmp/step-parts"))
    ap.add_argument("--json", type=Path)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--bootstrap", help=argparse.SUPPRESS)
    ap.add_argument("--url", default="", help=argparse.SUPPRESS)
    ap.add_argument("--ends", default="{}", help=argparse.SUPPRESS)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.child:
        ends = {int(p): int(e) for p, e in json.loads(args.ends).items()}
        doc = child(args.child, args.bootstrap, args.url, sizes, args.reps, ends)
        print("RESULT " + json.dumps(doc), flush=True)
        return 0
    from sealcheck.systems.upsert_source.spark_server import SparkServer

    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    backend = LocalBackend(1, args.work, "parts")
    backend.start(TOPIC, 3)
    server = None
    results: dict[str, dict[str, Any]] = {}
    try:
        mix = UpsertMix(keys=args.keys)
        smoke.produce(
            backend.bootstrap, TOPIC, upsert_records(random.Random(args.seed), max(sizes), mix)
        )
        ends = log_end(backend.bootstrap, TOPIC)
        print(f"topic: {ends}", flush=True)
        for mode in args.modes.split(","):
            url = ""
            if mode == "connect":
                (args.work / "spark-server").mkdir(exist_ok=True)
                server = SparkServer(backend, args.work / "spark-server")
                server.ensure()
                url = server.url
            cmd = [sys.executable, __file__, "--child", mode, "--bootstrap", backend.bootstrap]
            cmd += ["--url", url, "--sizes", args.sizes, "--reps", str(args.reps)]
            cmd += ["--ends", json.dumps(ends)]
            # started in the work directory: its Spark driver makes artifacts/ where it starts
            done = subprocess.run(
                cmd, capture_output=True, text=True, check=False, cwd=args.work.absolute()
            )
            found = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULT ")]
            if done.returncode != 0 or not found:
                print(f"{mode} failed:\n{(done.stdout + done.stderr)[-3000:]}", flush=True)
                continue
            results[mode] = json.loads(found[-1][len("RESULT ") :])
            if server is not None:
                server.stop()
                server = None
    finally:
        if server is not None:
            server.stop()
        backend.stop(args.work)
    print()
    print(table(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
