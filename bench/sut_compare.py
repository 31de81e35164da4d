"""Both systems under test side by side on one topic: records/s and crash recovery.

    .venv/bin/python bench/sut_compare.py [--records 100000] [--keys 10000] [--kills 3]
        [--systems pipeline,delta-streaming] [--work /tmp/sut-compare]

One local broker and one topic (3 partitions) of ``--records`` seeded upserts, then for each
system in turn, deployed by its own descriptor exactly as a chaos run deploys it:

* **throughput**: one incarnation from a cold start until both ``data`` and ``errors`` have
  sealed the log end — records/s end to end (start-up included) and after its first sealed
  step (steady state);
* **recovery**: with a producer adding 400 records/s, ``--kills`` times: SIGKILL the
  incarnation, start the next at once, and time kill -> the next sealed step (the store's
  ``data`` upper passing its value at the kill; sampled every 0.1 s).

Prints one table; asserts nothing. Both read the same records, so their numbers compare.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness import smoke  # noqa: E402
from harness.workload import UpsertMix, records, upsert_records  # noqa: E402
from infra.local import LocalBackend  # noqa: E402
from infra.topic import log_end  # noqa: E402
from suts import system  # noqa: E402
from suts.api import Settings  # noqa: E402

TOPIC = "compare"
MIX = UpsertMix(keys=10_000, tombstone_ratio=0.05, bad_ratio=0.02, value_size=32)


def wait(cond: Any, timeout_s: float, what: str) -> float:
    """Seconds until ``cond()`` holds (sampled every 0.1 s); raises after ``timeout_s``."""
    start = time.monotonic()
    while not cond():
        if time.monotonic() - start > timeout_s:
            raise TimeoutError(f"{what} not within {timeout_s:.0f}s")
        time.sleep(0.1)
    return time.monotonic() - start


class Feeder(threading.Thread):
    """Produces seeded records at ``rate`` per second until stopped."""

    def __init__(self, bootstrap: str, rate: int, seed: int) -> None:
        super().__init__(daemon=True)
        self.bootstrap, self.rate, self.seed = bootstrap, rate, seed
        self.halt = threading.Event()

    def run(self) -> None:
        """Produce until :attr:`halt` is set."""
        from confluent_kafka import Producer

        p = Producer({"bootstrap.servers": self.bootstrap, "acks": "all", "linger.ms": 5})
        gen = records(random.Random(self.seed), MIX, tag="feed")
        while not self.halt.is_set():
            for _ in range(self.rate // 10):
                key, value = next(gen)
                p.produce(TOPIC, key=key, value=value)
            p.poll(0)
            time.sleep(0.1)
        p.flush(10)


def measure(name: str, backend: LocalBackend, work: Path, n: int, kills: int) -> dict[str, Any]:
    """Throughput and recovery of system ``name`` on the topic as it is now."""
    sut = system(name)
    spark = "connect" if name == "pipeline" else "local"
    settings = Settings(TOPIC, 20_000, 0, 1, spark=spark)
    logs = work / name / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    dep = sut.deploy(backend, settings, work / name, logs)
    dep.start()
    out: dict[str, Any] = {"system": name}
    incarnations: list[Any] = []

    def start(i: int) -> Any:
        inc = backend.incarnation(dep.launch(i), f"{name}-{i}", logs / f"{i}.log", work / "fp")
        inc.start()
        incarnations.append(inc)
        return inc

    def data_upper() -> int:
        p = dep.progress()
        return min(p.uppers.get("data", 0), p.uppers.get("errors", 0)) if p else 0

    try:
        end = log_end(backend.bootstrap, TOPIC)
        inc = start(0)
        first = wait(lambda: data_upper() > 0, 600, "a first sealed step")
        total = first + wait(
            lambda: (p := dep.progress()) is not None and p.covers(end), 1800, "the log end"
        )
        out["records_per_s"] = n / total
        out["steady_records_per_s"] = n / max(total - first, 1e-9)  # most records come after
        out["to_first_step_s"] = first
        out["to_log_end_s"] = total
        feeder = Feeder(backend.bootstrap, 400, 7)
        feeder.start()
        recover: list[float] = []
        try:
            for k in range(kills):
                before = data_upper()
                wait(lambda b=before: data_upper() > b, 300, "a step before the kill")
                at = data_upper()
                inc.kill()
                inc.wait_exit()
                killed = time.monotonic()
                inc = start(k + 1)
                wait(lambda a=at: data_upper() > a, 600, "the next sealed step after a kill")
                recover.append(time.monotonic() - killed)
        finally:
            feeder.halt.set()
            feeder.join()
        out["recovery_s"] = recover
    finally:
        for i in incarnations:
            i.stop(10)
        dep.stop()
    return out


def main() -> int:
    """Run the comparison and print the table."""
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--kills", type=int, default=3)
    ap.add_argument("--systems", default="pipeline,delta-streaming")
    ap.add_argument("--work", type=Path, default=Path("/tmp/sut-compare"))
    args = ap.parse_args()
    import shutil

    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    backend = LocalBackend(1, args.work, "compare")
    backend.start(TOPIC, 3)
    rows = []
    try:
        t = time.monotonic()
        smoke.produce(backend.bootstrap, TOPIC, upsert_records(random.Random(1), args.records, MIX))
        print(f"produced {args.records:,} records in {time.monotonic() - t:.1f}s", flush=True)
        for name in args.systems.split(","):
            rows.append(measure(name, backend, args.work, args.records, args.kills))
            print(rows[-1], flush=True)
    finally:
        backend.stop(args.work)
    print(
        f"\n{'system':<16} {'rec/s e2e':>10} {'rec/s steady':>13} {'first step':>11} "
        f"{'log end':>9} {'recovery p50 (all)':>30}"
    )
    for r in rows:
        rec = r.get("recovery_s", [])
        p50 = f"{statistics.median(rec):.1f}s" if rec else "-"
        every = ", ".join(f"{x:.1f}" for x in rec)
        print(
            f"{r['system']:<16} {r['records_per_s']:>10,.0f} {r['steady_records_per_s']:>13,.0f} "
            f"{r['to_first_step_s']:>10.1f}s {r['to_log_end_s']:>8.1f}s {p50:>8} ({every})"
        )
    if len(rows) == 2:
        a, b = rows
        print(
            f"\n{a['system']} / {b['system']}: {a['records_per_s'] / b['records_per_s']:.2f}x "
            "records/s end to end"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
