"""Versioned columns benchmark (issue 53): what splitting a release's new column off an
export costs (:func:`sealcheck.rundir.version_effects.split_export`), beside its peer measured
in the same run — writing the same export (:func:`sealcheck.rundir.files.write_export`). Rows
like the example job's (``i``, ``w``, ``p`` and ``tier``), each update of a key retracting its
previous row. Prints seconds, rows per second, the ratio and peak memory; asserts nothing.

    .venv/bin/python bench/version_split_bench.py [--updates 1000000] [--keys 100000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import random
import resource
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from sealcheck.core.effects import encode_key, encode_row
from sealcheck.rundir.files import write_export
from sealcheck.rundir.version_effects import split_export


def rows_of(updates: int, keys: int, seed: int) -> list[tuple[str, bytes, bytes, int, int]]:
    """``updates`` data updates over ``keys`` keys, 1,000 per step, seeded."""
    rng = random.Random(seed)
    held: dict[int, bytes] = {}
    out: list[tuple[str, bytes, bytes, int, int]] = []
    i = 0
    while len(out) < updates:
        k = rng.randrange(keys)
        key = encode_key(f"k{k}")
        ts = len(out) // 1000
        tier = None if i < updates // 4 else ("even" if i % 2 == 0 else "odd")
        row = encode_row({"i": i, "w": "w0", "p": "x" * 10, "tier": tier})
        if k in held:
            out.append(("data", key, held[k], ts, -1))
        out.append(("data", key, row, ts, 1))
        held[k] = row
        i += 1
    return out[:updates]


def timed(run: Any) -> float:
    """Seconds ``run()`` took."""
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def main() -> None:
    """Time both, ``--repeat`` times, and print the medians."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--updates", type=int, default=1_000_000)
    p.add_argument("--keys", type=int, default=100_000)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    rows = rows_of(args.updates, args.keys, seed=1)
    frontiers = {"data": {"upper": rows[-1][3] + 1, "since": 0}}
    writes, splits = [], []
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory() as tmp:
            d = Path(tmp)
            writes.append(timed(lambda d=d: write_export(d, frontiers, [rows])))
            splits.append(timed(lambda d=d: split_export(d, ("tier",))))
    w, s = statistics.median(writes), statistics.median(splits)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"updates: {len(rows):,} over {args.keys:,} keys; median of {args.repeat}")
    print(f"write_export (peer): {w:.2f} s ({len(rows) / w:,.0f} rows/s)")
    print(f"split_export:        {s:.2f} s ({len(rows) / s:,.0f} rows/s)")
    print(f"split / write: {s / w:.1f}x; peak RSS {peak:,.0f} MB")


if __name__ == "__main__":
    main()
