"""The pipeline's SQLite store at ``--keys`` live keys: what a step's append, a compaction and a
rehydration's snapshot cost (prints numbers; asserts nothing).

    .venv/bin/python bench/store_bench.py [--keys 1000000] [--step 100000]

A ``data`` collection holding one value for each of ``--keys`` keys (one append at ts 0), then
one step that changes ``--step`` keys (a retraction and an insertion each, ts 1), then
``compact(data, 2)`` (every update below 2 merged, as ``--retain-steps`` / ``--compact-every``
do: it reads, deletes and rewrites every live key) and ``snapshot(data, 2)`` (what rehydration
reads). Values are ~32-byte JSON, as in ``bench/scale.py``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from sealcheck_upsert_source.persist import Update, open_store


def value(i: int, version: int) -> bytes:
    """Key ``i``'s value at ``version``."""
    return b'{"i": %d, "p": "xxxxxxxxxxxxxxxx"}' % (i + version)


def main() -> None:
    """Fill, step, compact, snapshot; print the times and the file's size."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keys", type=int, default=1_000_000)
    ap.add_argument("--step", type=int, default=100_000, help="keys changed by the step")
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
        changed = range(min(args.step, args.keys))
        step = [Update(keys[i], value(i, 0), 1, -1) for i in changed]
        step += [Update(keys[i], value(i, 1), 1, 1) for i in changed]
        t = time.monotonic()
        store.compare_and_append("data", step, 1, 2)
        append = time.monotonic() - t
        store.compare_and_append("data", [], 2, 3)  # compaction needs since < upper
        t = time.monotonic()
        store.compact("data", 2)
        compact = time.monotonic() - t
        t = time.monotonic()
        live = store.snapshot("data", 2)
        snapshot = time.monotonic() - t
        size = sum(p.stat().st_size for p in Path(tmp).glob("store.db*"))
    print(
        f"{args.keys:,} keys: first append {fill:.1f}s; a step of {len(step):,} updates "
        f"{append:.2f}s; compaction {compact:.1f}s; snapshot ({len(live):,} keys) "
        f"{snapshot:.1f}s; store {size / 2**20:,.0f} MiB on disk (with its WAL)"
    )


if __name__ == "__main__":
    main()
