"""Prefix checker benchmark: the sweep of :mod:`sealcheck.checkers.prefix.sweep` over 10,000,000
input records of 100,000 keys and 1,000 observed states (a correct run: each state is the
upsert of a per-partition prefix), then the same with one state corrupted. Prints the time of
building the observed values, of the sweep and in all; asserts nothing about time.

    .venv/bin/python bench/prefix_bench.py [--records 10000000] [--keys 100000] [--states 1000]
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np
import polars as pl

from sealcheck.checkers.prefix.sweep import judge, observed_values


def generate(
    records: int, keys: int, states: int, partitions: int, seed: int
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Effects (``partition, offset, kh, vh, row``) and the changes of ``states`` observed
    states at evenly spaced cuts of every partition."""
    rng = np.random.default_rng(seed)
    kid = rng.integers(0, keys, records)
    part = kid % partitions
    tomb = rng.random(records) < 0.02
    vh = rng.integers(1, 2**62, records).astype(np.uint64)
    eff = (
        pl.DataFrame(
            {
                "row": np.arange(records, dtype=np.int64),
                "partition": part.astype(np.int64),
                "kh": (kid.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)) | np.uint64(1),
                "vh": vh,
            }
        )
        .with_columns(pl.int_range(pl.len()).over("partition").cast(pl.Int64).alias("offset"))
        .with_columns(pl.when(pl.Series(~tomb)).then(pl.col("vh")).alias("vh"))
    )
    sizes = eff.group_by("partition").len()
    size = dict(zip(sizes["partition"].to_list(), sizes["len"].to_list(), strict=True))
    # the state at which each record first shows: cuts at (j + 1) / states of each partition
    state = eff.with_columns(
        (
            (pl.col("offset") * states)
            // pl.col("partition").replace_strict(size, return_dtype=pl.Int64)
        ).alias("state")
    )
    last = state.sort("kh", "state", "offset").unique(
        ["kh", "state"], keep="last", maintain_order=True
    )
    last = last.with_columns(
        pl.when(pl.col("kh") == pl.col("kh").shift(1)).then(pl.col("vh").shift(1)).alias("old")
    ).filter(pl.col("old").ne_missing(pl.col("vh")))
    adds = last.filter(pl.col("vh").is_not_null()).select(
        "state", "kh", "vh", pl.lit(1).alias("diff")
    )
    drops = last.filter(pl.col("old").is_not_null()).select(
        "state", "kh", pl.col("old").alias("vh"), pl.lit(-1).alias("diff")
    )
    observed = pl.concat([adds, drops]).with_columns(pl.col("diff").cast(pl.Int64))
    return eff.select("row", "partition", "offset", "kh", "vh"), observed


def main() -> None:
    """Generate, judge a correct history, then one with a state gone back; print the times."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=10_000_000)
    ap.add_argument("--keys", type=int, default=100_000)
    ap.add_argument("--states", type=int, default=1_000)
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    t0 = time.monotonic()
    eff, observed = generate(args.records, args.keys, args.states, args.partitions, args.seed)
    print(
        f"generated {eff.height:,} records of {args.keys:,} keys in {args.partitions} partitions, "
        f"{args.states:,} states ({observed.height:,} changes) in {time.monotonic() - t0:.1f}s"
    )
    t1 = time.monotonic()
    observed_values(observed)
    t2 = time.monotonic()
    out = judge(eff, observed)
    t3 = time.monotonic()
    print(f"shown values from the changes: {t2 - t1:.1f}s")
    print(
        f"judged (shown values, index, sweep, final): {t3 - t2:.1f}s -> valid={out.valid}, "
        f"{len(out.states):,} states, {out.conflict_count} conflicts"
    )
    # a state that goes back: state 500 shows state 400's value of one changed key
    pick = observed.filter((pl.col("state") == args.states // 2) & (pl.col("diff") == 1)).head(1)
    bad = pl.concat(
        [
            observed,
            pick.with_columns(pl.lit(-1, pl.Int64).alias("diff")),
            pick.with_columns(
                pl.lit(1, pl.Int64).alias("diff"), pl.lit(12345, pl.UInt64).alias("vh")
            ),
        ]
    )
    t4 = time.monotonic()
    broken = judge(eff, bad)
    t5 = time.monotonic()
    print(
        f"judged with one corrupted state: {t5 - t4:.1f}s -> valid={broken.valid}, "
        f"{broken.conflict_count} conflicts"
    )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak memory {peak:,.0f} MiB")


if __name__ == "__main__":
    main()
