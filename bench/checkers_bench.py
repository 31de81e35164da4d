"""Checkers benchmark: a correct run with ~10,000,000 updates over 1,000,000 keys in 1,000
steps, judged by every checker. Prints wall time per phase and peak memory; asserts nothing
about time.

    .venv/bin/python bench/checkers_bench.py [--updates 10000000] [--keys 1000000] [--steps 1000]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import resource
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

from sealcheck.checkers import load_run, run_checkers
from sealcheck.rundir.acks import AckWriter
from sealcheck.rundir.files import ACKS, FRONTIERS, UPDATES, describe


def generate(run_dir: Path, updates: int, keys: int, steps: int, seed: int) -> int:
    """Write a correct run directory; return the number of persisted updates."""
    rng = np.random.default_rng(seed)
    records = (updates + keys) // 2  # each record of a seen key yields 2 updates, a new key 1
    partitions = 3
    key_ids = rng.integers(0, keys, records)
    tomb = rng.random(records) < 0.02
    part = key_ids % partitions
    rec = pl.DataFrame({"n": np.arange(records), "kid": key_ids, "partition": part, "tomb": tomb})
    rec = rec.with_columns(
        pl.int_range(pl.len()).over("partition").alias("offset"),
        (pl.col("n") * steps // records).alias("step"),
        pl.concat_str(pl.lit("k"), pl.col("kid").cast(pl.String)).cast(pl.Binary).alias("key"),
        pl.when(~pl.col("tomb"))
        .then(
            pl.concat_str(pl.lit('{"i": '), pl.col("n").cast(pl.String), pl.lit("}")).cast(
                pl.Binary
            )
        )
        .alias("value"),
    )
    # by partition, then offset: as the harness's topic dump writes it
    rec.sort("partition", "offset").select("partition", "offset", "key", "value").write_parquet(
        run_dir / "topic.parquet"
    )
    win = rec.sort("kid", "step", "n").unique(
        subset=["kid", "step"], keep="last", maintain_order=True
    )
    same = pl.col("kid") == pl.col("kid").shift(1)
    win = win.with_columns(pl.when(same).then(pl.col("value").shift(1)).alias("prev"))
    changed = win.filter(pl.col("prev").ne_missing(pl.col("value")))
    data = pl.concat(
        [
            changed.filter(pl.col("prev").is_not_null()).select(
                "key",
                pl.col("prev").alias("value"),
                pl.col("step").alias("ts"),
                pl.lit(-1, pl.Int64).alias("diff"),
            ),
            changed.filter(pl.col("value").is_not_null()).select(
                "key", "value", pl.col("step").alias("ts"), pl.lit(1, pl.Int64).alias("diff")
            ),
        ]
    ).with_columns(pl.lit("data").alias("collection"))
    ends = (
        rec.group_by("partition", "step")
        .agg((pl.col("offset").max() + 1).alias("end"))
        .sort("partition", "step")
        .with_columns(pl.col("end").shift(1).over("partition").alias("old"))
    )
    bkey = pl.col("partition").cast(pl.String).cast(pl.Binary)
    bindings = pl.concat(
        [
            ends.filter(pl.col("old").is_not_null()).select(
                bkey.alias("key"),
                pl.col("old").cast(pl.String).cast(pl.Binary).alias("value"),
                pl.col("step").alias("ts"),
                pl.lit(-1, pl.Int64).alias("diff"),
            ),
            ends.select(
                bkey.alias("key"),
                pl.col("end").cast(pl.String).cast(pl.Binary).alias("value"),
                pl.col("step").alias("ts"),
                pl.lit(1, pl.Int64).alias("diff"),
            ),
        ]
    ).with_columns(pl.lit("bindings").alias("collection"))
    cols = ["collection", "key", "value", "ts", "diff"]
    # In step order, as the pipeline appends them (bindings of a step first).
    all_updates = pl.concat([bindings.select(cols), data.select(cols)]).sort(
        "ts", maintain_order=True
    )
    (run_dir / UPDATES).parent.mkdir()
    all_updates.write_parquet(run_dir / UPDATES)
    frontiers = {c: {"upper": steps, "since": 0} for c in ("data", "errors", "bindings")}
    (run_dir / FRONTIERS).write_text(json.dumps(frontiers))
    writer = AckWriter(run_dir / ACKS)  # the acknowledgements, as the harness writes them
    writer.extend(
        rec.select(
            (pl.col("n") * 1000).alias("time"), "partition", "offset", "key", "value"
        ).to_arrow()
    )
    writer.close()
    obs = [
        {
            "index": s,
            "time": (s + 1) * records * 1000 // steps,
            "process": "observer",
            "type": "info",
            "f": "uppers",
            "value": {"bindings": s + 1, "data": s + 1, "errors": s + 1},
        }
        for s in range(steps)
    ]
    ends = rec.group_by("partition").agg(pl.col("offset").max() + 1)
    final = [
        ("log-end", {str(p): int(o) for p, o in ends.iter_rows()}),
        ("caught-up", {"took_s": 0.0}),
        ("inputs", {"files": describe(run_dir), "writes": {"ok": records}}),
    ]
    with open(run_dir / "history.jsonl", "wb") as fh:
        for op in obs:
            fh.write(json.dumps(op).encode() + b"\n")
        for i, (f, value) in enumerate(final):
            index, time_ns = steps + i, records * 1000 + i
            op = {"index": index, "time": time_ns, "process": "harness", "type": "info"}
            fh.write(json.dumps({**op, "f": f, "value": value}).encode() + b"\n")
    return all_updates.filter(pl.col("collection") == "data").height


def main() -> None:
    """Generate, load and check; print the numbers."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--updates", type=int, default=10_000_000)
    ap.add_argument("--keys", type=int, default=1_000_000)
    ap.add_argument("--steps", type=int, default=1_000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="sealcheck-checkers-bench-") as name:
        run_dir = Path(name)
        t0 = time.monotonic()
        # Generated in a child process, so the peak RSS printed below is loading + checking.
        ctx = multiprocessing.get_context("spawn")
        with ctx.Pool(1) as pool:
            n = pool.apply(generate, (run_dir, args.updates, args.keys, args.steps, args.seed))
        print(
            f"generated {n:,} data updates over {args.keys:,} keys in {args.steps} steps "
            f"({time.monotonic() - t0:.1f}s)"
        )
        t0 = time.monotonic()
        run = load_run(run_dir)  # reads the history's ops, checks every file's digest
        open_s = time.monotonic() - t0
        run.prepare()  # parse and hash every input now, so judging is timed on its own
        load_s = time.monotonic() - t0
        history_mb = (run_dir / "history.jsonl").stat().st_size / 1e6
        acks_mb = (run_dir / ACKS).stat().st_size / 1e6
        print(
            f"load: {load_s:.1f}s, of which opening {open_s:.1f}s (history lines checked, "
            f"input digests verified) ({run.classified().height:,} records, "
            f"{run.acked().height:,} acknowledged writes in {acks_mb:,.0f} MB of acks.arrows "
            f"beside a {history_mb:,.1f} MB history)"
        )
        t0 = time.monotonic()
        result = run_checkers(run)
        check_s = time.monotonic() - t0
        for name_, r in result.checkers.items():
            print(f"  {name_:<15} {r.took_s:6.2f}s  valid={r.valid}  {r.anomaly_counts or ''}")
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"inputs complete: {not result.input_problems} {result.input_problems or ''}")
        print(
            f"verdict: {result.valid}; checkers {check_s:.1f}s = {n / check_s:,.0f} updates/s; "
            f"load + checkers {load_s + check_s:.1f}s = {n / (load_s + check_s):,.0f} updates/s; "
            f"peak RSS {peak:,.0f} MiB"
        )


if __name__ == "__main__":
    main()
