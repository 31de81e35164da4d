"""Pipeline throughput and rehydration benchmark (prints numbers; asserts nothing about time).

    .venv/bin/python bench/pipeline_bench.py [--records 1000000] [--keys 100000]
        [--step 100000] [--rehydrate 100000,1000000]

Throughput: a local Kafka broker, ``--records`` seeded upserts over ``--keys`` keys on 3
partitions, then the real step loop (Spark batch reads, SQLite persist) from an empty store
until it has sealed the log end. Rehydration: a store holding N keys, then the time
``StepLoop.rehydrate`` takes to rebuild state and bindings from it.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import tempfile
import threading
import time
from pathlib import Path

from sealcheck.harness.cli import smoke
from sealcheck.harness.run.workload import UpsertMix, upsert_records
from sealcheck.infra.jars import spark_connector_jars
from sealcheck.infra.kafka_local import KafkaCluster
from sealcheck.infra.topic import log_end
from sealcheck_upsert_source.loop import BINDINGS, DATA, ERRORS, LoopConfig, StepLoop
from sealcheck_upsert_source.persist import Batch, Update, open_store
from sealcheck_upsert_source.source import KafkaSparkSource
from sealcheck_upsert_source.spark import spark_session


def quiet(event: dict[str, object]) -> None:
    """Discard loop events."""
    del event


def throughput(records: int, keys: int, step: int, tmp: Path) -> None:
    """Produce the workload, run the step loop to the log end, print rates."""
    mix = UpsertMix(keys=keys, tombstone_ratio=0.05, bad_ratio=0.0, value_size=32)
    with KafkaCluster(tmp / "kafka", heap_mb=1024) as kafka:
        kafka.create_topic("bench", partitions=3)
        t0 = time.monotonic()
        pairs = upsert_records(random.Random(1), records, mix)
        smoke.produce(kafka.bootstrap, "bench", pairs)
        print(f"produce: {records} records in {time.monotonic() - t0:.1f}s")
        spark = spark_session([str(p) for p in spark_connector_jars()], "sealcheck-bench")
        store = open_store(str(tmp / "bench.db"))
        source = KafkaSparkSource(kafka.bootstrap, "bench", spark)
        loop = StepLoop(store, source, LoopConfig(max_records_per_step=step), quiet)
        loop.rehydrate()
        end = log_end(kafka.bootstrap, "bench")
        t0 = time.monotonic()
        steps = loop.run(threading.Event(), max_steps=-(-records // step))
        took = time.monotonic() - t0
        assert loop.bound == end, (loop.bound, end)
        print(
            f"pipeline: {records} upserts over {keys} keys, step size {step}: {steps} steps "
            f"in {took:.1f}s = {records / took:,.0f} records/s, {steps / took:.2f} steps/s; "
            f"{len(loop.data)} live keys"
        )
        source.close()
        store.close()
        spark.stop()


def rehydration(keys: int, tmp: Path) -> None:
    """Time rebuilding state from a store of ``keys`` keys."""
    store = open_store(str(tmp / f"rehydrate-{keys}.db"))
    value = b'{"v": "' + b"x" * 24 + b'"}'
    data = [Update(f"k{i}".encode(), value, 0, 1) for i in range(keys)]
    store.compare_and_append_many(
        {
            DATA: Batch(data, 0, 1),
            ERRORS: Batch([], 0, 1),
            BINDINGS: Batch([Update(b"0", str(keys).encode(), 0, 1)], 0, 1),
        }
    )
    loop = StepLoop(store, source=None, config=LoopConfig(), log=quiet)  # type: ignore[arg-type]
    t0 = time.monotonic()
    loop.rehydrate()
    took = time.monotonic() - t0
    assert len(loop.data) == keys
    print(f"rehydrate: {keys} keys in {took:.2f}s ({keys / took:,.0f} keys/s)")
    store.close()


def main() -> None:
    """Run the benchmarks named on the command line."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--keys", type=int, default=100_000)
    ap.add_argument("--step", type=int, default=100_000)
    ap.add_argument("--rehydrate", default="100000,1000000")
    ap.add_argument("--skip-throughput", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="sealcheck-bench-") as name:
        tmp = Path(name)
        os.chdir(tmp)  # its Spark driver makes artifacts/ in the working directory
        for n in (int(x) for x in args.rehydrate.split(",") if x):
            rehydration(n, tmp)
        if not args.skip_throughput:
            throughput(args.records, args.keys, args.step, tmp)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS of the Python process: {peak:.0f} MiB")


if __name__ == "__main__":
    main()
