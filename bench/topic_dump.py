"""The topic dump against a bare consumer reading the same broker in the same run.

The dump is ``sealcheck.infra.topic.read_topic`` + ``write_topic``, as the harness runs it after
the final phase; the peers are the bare confluent-kafka consumer of ``bench/raw_consumer.py``
(it touches each record's key and value, nothing more), with librdkafka's default fetch sizes
(how the dump fetched before) and with the dump's.

    python bench/topic_dump.py [--records 2000000] [--reps 2]

One local broker, a topic of 3 partitions, ``bench/scale.py``'s records (seeded). Each reader
runs in its own process, one after another, alternating over ``--reps``; each prints its wall
time and its peak RSS (``VmHWM``, the process alone; the records are produced by the parent).
"""

from __future__ import annotations

import argparse
import multiprocessing
import shutil
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from measure import MIB, vm_hwm  # noqa: E402
from raw_consumer import read_to_end  # noqa: E402
from scale_records import PARTITIONS, TOPIC, produce, workload  # noqa: E402

from sealcheck.infra.local import LocalBackend  # noqa: E402
from sealcheck.infra.topic import FETCH, log_end, read_topic  # noqa: E402
from sealcheck.rundir.files import write_topic  # noqa: E402


def _child(what: str, bootstrap: str, ends: dict[int, int], out: Path, q: Any) -> None:
    start = time.monotonic()
    if what == "dump":
        table = read_topic(bootstrap, TOPIC, ends)
        write_topic(table, out)
        rows = table.num_rows
    else:
        conf = dict(FETCH) if what == "bare, dump's fetch" else {}
        got = read_to_end(bootstrap, TOPIC, ends, 1 << 62, conf)  # no step marks
        rows = got["records"]
        assert isinstance(rows, int)
    q.put((rows, time.monotonic() - start, vm_hwm()))


def timed(what: str, bootstrap: str, ends: dict[int, int], out: Path) -> tuple[int, float, int]:
    """``what`` in a fresh process: rows, seconds, peak RSS."""
    ctx = multiprocessing.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=_child, args=(what, bootstrap, ends, out, q))
    p.start()
    got = q.get(timeout=3600)
    p.join()
    return got  # type: ignore[no-any-return]


def main() -> None:
    """Produce, then time each reader ``--reps`` times, alternating."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=2_000_000)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--work", type=Path, default=Path("/tmp/sealcheck-topic-dump"))
    args = ap.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    backend = LocalBackend(1, args.work, "dump")
    backend.start(TOPIC, PARTITIONS)
    try:
        frame = workload(args.records, max(1, args.records // 10), args.seed)
        _, _, failed = produce(backend.bootstrap, frame, time.monotonic_ns())
        del frame
        ends = log_end(backend.bootstrap, TOPIC)
        print(f"{sum(ends.values()):,} records in {PARTITIONS} partitions ({failed} not acked)")
        best: dict[str, float] = {}
        read: set[int] = set()
        for rep in range(args.reps):
            for what in ("dump", "bare, dump's fetch", "bare, default fetch"):
                rows, took, peak = timed(what, backend.bootstrap, ends, args.work / "t.parquet")
                best[what] = min(best.get(what, took), took)
                read.add(rows)
                print(
                    f"rep {rep} {what:22} {rows:,} rows {took:6.2f}s "
                    f"{rows / took:10,.0f} rec/s peak RSS {peak / MIB:,.0f} MiB",
                    flush=True,
                )
        if len(read) != 1:
            print(f"WARNING: the readers did not read the same number of records: {sorted(read)}")
        floor = best["bare, dump's fetch"]
        print(
            f"best: dump {best['dump']:.2f}s = {best['dump'] / floor:.2f}x the bare consumer "
            f"with its fetch ({floor:.2f}s); the bare consumer with librdkafka's default fetch "
            f"{best['bare, default fetch']:.2f}s = {best['bare, default fetch'] / floor:.2f}x"
        )
    finally:
        backend.stop(args.work)
        shutil.rmtree(args.work, ignore_errors=True)


if __name__ == "__main__":
    multiprocessing.freeze_support()
    main()
