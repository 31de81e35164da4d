"""What the lazy disk costs a job's own I/O: one batch as a Structured Streaming job with a
SQLite sink does it (``offsets/N`` written to a temporary file and renamed into place, the
batch's rows upserted in one SQLite transaction in WAL mode, ``commits/N`` likewise), timed on
a plain directory and on the lazy disk (:mod:`sealcheck.infra.lazy_disk`, no point armed), in
alternating rounds; a reader polls the table meanwhile, as the harness's observer does.

Prints the median time per batch of each and their ratio (lazy / plain). Run:
``python bench/lazy_disk_bench.py [--batches 200] [--rows 500] [--rounds 5]``.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import tempfile
import threading
import time
from pathlib import Path

from sealcheck.infra.lazy_disk import LazyDisk


def _batches(root: Path, batches: int, rows: int) -> float:
    """Seconds per batch for ``batches`` batches of ``rows`` rows under ``root``."""
    for d in ("offsets", "commits"):
        (root / "checkpoint" / d).mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(root / "accounts.db", isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE IF NOT EXISTS a (id TEXT PRIMARY KEY, v INTEGER, b INTEGER)")
    stop = threading.Event()

    def observe() -> None:  # the harness's observer: a snapshot read every 250 ms
        reader = sqlite3.connect(root / "accounts.db")
        while not stop.wait(0.25):
            reader.execute("SELECT COUNT(*), SUM(v) FROM a").fetchone()
        reader.close()

    observer = threading.Thread(target=observe)
    observer.start()

    def checkpoint(kind: str, n: int) -> None:
        tmp = root / "checkpoint" / kind / f".{n}.tmp"
        tmp.write_text('{"batchWatermarkMs":0}\n' + json.dumps({"topic": {"0": n * rows}}))
        os.rename(tmp, root / "checkpoint" / kind / str(n))

    start = time.perf_counter()
    for n in range(batches):
        checkpoint("offsets", n)
        db.execute("BEGIN")
        db.executemany(
            "INSERT INTO a VALUES (?, ?, ?) ON CONFLICT (id) DO UPDATE SET v = excluded.v,"
            " b = excluded.b",
            [(f"k{(n * 7 + i) % (rows * 4)}", n * rows + i, n) for i in range(rows)],
        )
        db.execute("COMMIT")
        checkpoint("commits", n)
    took = (time.perf_counter() - start) / batches
    stop.set()
    observer.join()
    db.close()
    return took


def main() -> None:
    """Alternate plain and lazy rounds; print the medians and the ratio."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", type=int, default=200)
    ap.add_argument("--rows", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    plain: list[float] = []
    lazy: list[float] = []
    with tempfile.TemporaryDirectory(prefix="sealcheck-lazy-bench-") as tmp:
        for r in range(args.rounds):
            plain.append(_batches(Path(tmp) / f"plain-{r}", args.batches, args.rows))
            disk = LazyDisk(Path(tmp) / f"durable-{r}", Path(tmp) / f"mnt-{r}", Path(tmp) / "log")
            disk.start()
            try:
                lazy.append(_batches(disk.mountpoint, args.batches, args.rows))
            finally:
                disk.stop()
    p, q = statistics.median(plain), statistics.median(lazy)
    print(f"batches of {args.rows} rows, {args.batches} per round, {args.rounds} rounds")
    print(f"plain directory: {p * 1000:.2f} ms per batch (median)")
    print(f"lazy disk:       {q * 1000:.2f} ms per batch (median)")
    print(f"ratio lazy/plain: {q / p:.1f}x")


if __name__ == "__main__":
    main()
