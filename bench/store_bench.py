"""The pipeline's SQLite store at ``--keys`` live keys: what a step's append, a compaction and a
rehydration's snapshot cost (prints numbers; asserts nothing).

    .venv/bin/python bench/store_bench.py [--keys 1000000] [--step 100000]

A ``data`` collection holding one value for each of ``--keys`` keys (one append at ts 0), then
one step that changes ``--step`` keys (a retraction and an insertion each, ts 1, sealed with an
empty step at ts 2), then ``compact(data, 2)``: every key changed since the last compaction
(here: all of them, the first compaction) has its updates below 2 merged. Then a second step
changing another ``--step`` keys (ts 3, sealed with ts 4) and ``compact(data, 4)``: a
compaction as the step loop runs it every ``--compact-every`` steps, which rewrites only the
keys changed since the last one (issue 28). Then ``snapshot(data, 4)``, what a rehydration
reads. Then ``--retained`` more steps of ``--step`` changed keys each (seeded random keys),
not compacted, and the snapshot again: a rehydration with that much history kept (a harness
run kept 20 steps before the observer's read hold), whose ``GROUP BY`` sorts every retained
row. Last, ``--held`` more such steps compacted every 2 to the step before the upper, as a
chaos run's store is compacted while the observer's read hold follows the tip (the first of
them merges the retained steps too), and the snapshot once more. Values are ~32-byte JSON, as
in ``bench/scale.py``.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

from sealcheck_upsert_source.persist import Update, open_store


def value(i: int, version: int) -> bytes:
    """Key ``i``'s value at ``version``."""
    return b'{"i": %d, "p": "xxxxxxxxxxxxxxxx"}' % (i + version)


def random_step(
    rng: random.Random, keys: list[bytes], version: list[int], changes: int, ts: int
) -> list[Update]:
    """A step at ``ts`` changing up to ``changes`` seeded random keys (a retraction and an
    insertion each), advancing their ``version``."""
    step = []
    for i in sorted(set(rng.randrange(len(keys)) for _ in range(changes))):
        step.append(Update(keys[i], value(i, version[i]), ts, -1))
        version[i] += 1
        step.append(Update(keys[i], value(i, version[i]), ts, 1))
    return step


def main() -> None:
    """Fill, step, compact, snapshot; print the times and the file's size."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keys", type=int, default=1_000_000)
    ap.add_argument("--step", type=int, default=100_000, help="keys changed by the step")
    ap.add_argument(
        "--retained", type=int, default=20, help="steps retained before the second snapshot"
    )
    ap.add_argument("--held", type=int, default=10, help="steps compacted every 2 at the end")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="sealcheck-store-bench-") as tmp:
        db = Path(tmp) / "store.db"
        store = open_store(str(db))
        keys = [b"k%d" % i for i in range(args.keys)]
        t = time.monotonic()
        store.compare_and_append(
            "data", [Update(k, value(i, 0), 0, 1) for i, k in enumerate(keys)], 0, 1
        )
        fill = time.monotonic() - t
        steps, compactions, upper = [], [], 1
        for n in (0, 1):  # a step at ts upper, sealed; then compaction to just below the upper
            changed = range(n * args.step, min((n + 1) * args.step, args.keys))
            step = [Update(keys[i], value(i, 0), upper, -1) for i in changed]
            step += [Update(keys[i], value(i, 1), upper, 1) for i in changed]
            began = time.monotonic()
            store.compare_and_append("data", step, upper, upper + 1)
            steps.append(time.monotonic() - began)
            store.compare_and_append("data", [], upper + 1, upper + 2)  # since must be < upper
            upper += 2
            began = time.monotonic()
            store.compact("data", upper - 1)
            compactions.append(time.monotonic() - began)
        t = time.monotonic()
        live = store.snapshot("data", upper - 1)
        snapshot = time.monotonic() - t
        version = [1 if i < 2 * args.step else 0 for i in range(args.keys)]
        rng = random.Random(1)
        for _ in range(args.retained):
            step = random_step(rng, keys, version, args.step, upper)
            store.compare_and_append("data", step, upper, upper + 1)
            upper += 1
        t = time.monotonic()
        retained = store.snapshot("data", upper - 1)
        retained_s = time.monotonic() - t
        assert len(retained) == args.keys
        held = []
        for n in range(args.held):
            step = random_step(rng, keys, version, args.step, upper)
            store.compare_and_append("data", step, upper, upper + 1)
            upper += 1
            if n % 2:
                t = time.monotonic()
                store.compact("data", upper - 1)
                held.append(time.monotonic() - t)
        t = time.monotonic()
        assert len(store.snapshot("data", upper - 1)) == args.keys
        held_snapshot = time.monotonic() - t
        size = sum(p.stat().st_size for p in Path(tmp).glob("store.db*"))
    print(
        f"{args.keys:,} keys: first append {fill:.1f}s; a step of {2 * args.step:,} updates "
        f"{steps[0]:.2f}s, then {steps[1]:.2f}s; first compaction (every key) "
        f"{compactions[0]:.1f}s; a compaction after one step {compactions[1]:.2f}s; snapshot "
        f"({len(live):,} keys) {snapshot:.1f}s; with {args.retained} steps retained "
        f"{retained_s:.1f}s; then compacted every 2 of {args.held} steps: "
        f"{', '.join(f'{c:.2f}' for c in held)}s, snapshot {held_snapshot:.1f}s; "
        f"store {size / 2**20:,.0f} MiB on disk (with its WAL)"
    )


if __name__ == "__main__":
    main()
