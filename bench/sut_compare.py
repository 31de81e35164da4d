"""Both systems under test and the raw-consumer ceiling side by side on one topic: records/s,
per-step times, peak RSS and crash recovery, with their ratios.

    .venv/bin/python bench/sut_compare.py [--records 100000] [--keys 10000] [--kills 3]
        [--max-records-per-step 20000] [--systems raw,upsert-source,delta-streaming] [--seed 1]
        [--spark connect|cluster] [--work /tmp/sut-compare] [--json PATH]

One local broker and one topic (3 partitions) of ``--records`` upserts (seeded by ``--seed``).
Its log end right after producing (``n`` records) is the end every column is timed to. Then,
one system at a time, each deployed by its own descriptor exactly as a chaos run deploys it:

* ``raw``, the ceiling: a bare confluent-kafka consumer in its own process
  (``bench/raw_consumer.py``) reading offset 0 to that log end and doing nothing with the
  records, with the topic dump's 16 MiB fetches (``sealcheck.infra.topic.FETCH``; the 1 MiB
  default made it 3.4x slower, a ceiling set low);
* ``upsert-source`` (Spark Connect, the default of a chaos run) and ``delta-streaming`` (its own
  local-mode driver), each a cold incarnation on an empty store, until its ``data`` and
  ``errors`` have sealed a step whose bindings reach that log end. With ``--spark cluster``
  both drive a Spark standalone cluster of local processes instead (a master and two workers
  of one core, as ``sealcheck run --spark cluster`` deploys it; its JVMs count in the
  system's memory).

Columns:

* **rec/s e2e**: ``n`` / seconds from starting the process to the log end sealed (start-up
  included); **rec/s steady**: ``n`` / seconds after its first sealed step (most records
  come after it);
* **step p50 / p99**: one step's time while catching up — the wall time between two
  consecutive sealed steps (steps of up to ``--max-records-per-step`` records; for the Delta job
  a micro-batch, i.e. its ``data`` upper), seen from outside by sampling the lower of the
  ``data`` and ``errors`` uppers every 0.05 s; for ``raw`` the time to read the next
  ``--max-records-per-step`` records. The first step (start-up) is not one of them;
* **peak RSS**: the largest sum, sampled every 0.2 s from ``/proc`` while catching up, of the
  resident memory of the system's whole process tree (our pipeline: the incarnation and the
  Spark Connect server's JVM; the Delta job: its Python driver and the driver's JVM; ``raw``:
  its process, whose own peak, ``VmHWM``, is taken when larger) — the broker excluded;
  shared pages count in each process;
* **CPU** (printed under the table; ``measure.cpu_between``): for a system, from its first
  sealed step to the log end (the steady window); for ``raw``, its whole run, start-up
  included. The machine's busy core-seconds and their share of its capacity; core-seconds per
  100,000 records (``n`` records, as the steady rate counts them, though the first step's are
  outside the window), the machine's and the system's own (its processes and the broker); and
  the split: per command name, ``exited`` (for ``raw``, the consumer), ``brokers``,
  ``harness`` (this bench, sampling) and ``other``. A system whose steady window keeps every
  core busy can gain only the idle share on this machine without doing less work per record;
* **recovery**: then, with a producer adding 400 records/s, ``--kills`` times: SIGKILL the
  incarnation, start the next at once, and time kill -> the next sealed step (the lower
  upper passing its value at the kill; sampled every 0.1 s). Not for ``raw``, which keeps no
  state.

A system measured after another also finds the other's recovery records past the log end;
it is still timed to that log end (a step may cross it). Prints one table and the ratios;
``--json`` writes them. Asserts nothing.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from measure import (  # noqa: E402
    CpuSnapshot,
    StepClock,
    TreeRss,
    cpu_between,
    cpu_snapshot,
    log_events,
    percentile,
    step_phases,
    step_stats,
    wait,
)

from sealcheck.harness.cli import smoke  # noqa: E402
from sealcheck.harness.run.workload import UpsertMix, records, upsert_records  # noqa: E402
from sealcheck.infra.local import LocalBackend  # noqa: E402
from sealcheck.infra.topic import FETCH, log_end  # noqa: E402
from sealcheck.systems import system  # noqa: E402
from sealcheck.systems.api import Settings  # noqa: E402

TOPIC = "compare"
RAW = "raw"


class Feeder(threading.Thread):
    """Produces seeded records at ``rate`` per second until stopped."""

    def __init__(self, bootstrap: str, rate: int, seed: int, mix: UpsertMix) -> None:
        super().__init__(daemon=True)
        self.bootstrap, self.rate, self.seed, self.mix = bootstrap, rate, seed, mix
        self.halt = threading.Event()

    def run(self) -> None:
        """Produce until :attr:`halt` is set."""
        from confluent_kafka import Producer

        p = Producer({"bootstrap.servers": self.bootstrap, "acks": "all", "linger.ms": 5})
        gen = records(random.Random(self.seed), self.mix, tag="feed")
        while not self.halt.is_set():
            for _ in range(self.rate // 10):
                key, value = next(gen)
                p.produce(TOPIC, key=key, value=value)
            p.poll(0)
            time.sleep(0.1)
        p.flush(10)


def brokers(backend: LocalBackend) -> list[int]:
    """The brokers' pids (left out of every process tree measured)."""
    return [pid for b in backend.brokers if (pid := b.ident) is not None]


def measure_raw(backend: LocalBackend, ends: dict[int, int], n: int, step: int) -> dict[str, Any]:
    """The ceiling: ``bench/raw_consumer.py`` reading the topic to ``ends``."""
    rss = TreeRss(lambda: brokers(backend), interval_s=0.02)
    rss.start()
    argv = [sys.executable, str(Path(__file__).with_name("raw_consumer.py"))]
    argv += ["--bootstrap", backend.bootstrap, "--topic", TOPIC, "--step", str(step)]
    argv += ["--ends", json.dumps({str(p): o for p, o in ends.items()})]
    argv += ["--conf", json.dumps(dict(FETCH))]  # the fastest bare reader: see its docstring
    t0, cpu0 = time.monotonic(), cpu_snapshot(brokers(backend))
    done = subprocess.run(argv, capture_output=True, text=True, check=True)
    cpu = cpu_between(cpu0, cpu_snapshot(brokers(backend)), n)  # the consumer: ``exited``
    mem = rss.stop()
    got = json.loads(done.stdout.splitlines()[-1])
    marks = [float(t) for t in got["steps"]]
    total = float(got["end"]) - t0
    first = marks[0] - t0 if marks else total
    return {
        "system": RAW,
        "records_read": got["records"],
        "records_per_s": n / total,
        "steady_records_per_s": n / max(total - first, 1e-9),
        "to_first_step_s": first,
        "to_log_end_s": total,
        "process_ready_s": float(got["ready"]) - t0,
        **step_stats([b - a for a, b in itertools.pairwise(marks)]),
        **mem,
        "cpu": {"window": "the whole run", **cpu},
        # its own peak (VmHWM): exact, where sampling sees little of so short a run
        "peak_rss_mib": round(max(mem["peak_rss_mib"] * 2**20, got["peak_rss_bytes"]) / 2**20, 1),
    }


def measure(
    name: str, backend: LocalBackend, work: Path, ends: dict[int, int], args: argparse.Namespace
) -> dict[str, Any]:
    """Throughput, step times, peak RSS and recovery of system ``name``."""
    sut = system(name)
    spark = (
        args.spark if args.spark == "cluster" else "connect" if name == "upsert-source" else "local"
    )
    settings = Settings(TOPIC, args.max_records_per_step, spark=spark)
    logs = work / name / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    rss = TreeRss(lambda: brokers(backend))
    rss.start()  # before the deployment starts: a Spark Connect server is part of the tree
    dep = sut.deploy(backend, settings, work / name, logs)
    dep.start()
    out: dict[str, Any] = {"system": name, "spark": spark}
    incarnations: list[Any] = []

    def start(i: int) -> Any:
        inc = backend.incarnation(dep.launch(i), f"{name}-{i}", logs / f"{i}.log", work / "fp")
        inc.start()
        incarnations.append(inc)
        return inc

    def sealed() -> int:
        u = dep.uppers()
        return min(u.get("data", 0), u.get("errors", 0)) if u else 0

    def past(u: int) -> Callable[[], bool]:
        return lambda: sealed() > u

    covered: dict[int, bool] = {}
    steady: list[CpuSnapshot] = []  # the CPU used so far, once the first step is sealed

    def covers() -> bool:  # progress() reads the bindings: only once per new upper
        u = clock.sample()
        if clock.first is not None and not steady:
            steady.append(cpu_snapshot(brokers(backend)))
        if u not in covered:
            covered[u] = (p := dep.progress()) is not None and p.covers(ends)
        return covered[u]

    try:
        clock = StepClock(sealed)
        inc = start(0)
        total = clock.until(covers, 1800, "the log end")
        if steady:
            window = cpu_between(steady[0], cpu_snapshot(brokers(backend)), args.records)
            out["cpu"] = {"window": "after the first sealed step", **window}
        first = clock.first if clock.first is not None else total
        n = args.records
        out["records_per_s"] = n / total
        out["steady_records_per_s"] = n / max(total - first, 1e-9)
        out["to_first_step_s"] = first
        out["to_log_end_s"] = total
        out.update(step_stats(clock.step_s))
        out["step_phases"] = step_phases(log_events(inc.log_text()))
        out["peak_rss_mib"] = round(rss.peak / 2**20, 1)
        out["peak_rss_parts_mib"] = {k: round(v / 2**20, 1) for k, v in rss.parts.items()}
        feeder = Feeder(backend.bootstrap, 400, 7, mix(args))
        feeder.start()
        recover: list[float] = []
        try:
            for k in range(args.kills):
                wait(past(sealed()), 300, "a step before the kill")
                at = sealed()
                inc.kill()
                inc.wait_exit()
                killed = time.monotonic()
                inc = start(k + 1)
                wait(past(at), 600, "the next sealed step after a kill")
                recover.append(time.monotonic() - killed)
        finally:
            feeder.halt.set()
            feeder.join()
        out["recovery_s"] = recover
        out["recovery_p50_s"] = percentile(recover, 50)
    finally:
        for i in incarnations:
            i.stop(10)
        dep.stop()
        whole = rss.stop()
        out["peak_rss_with_recovery_mib"] = whole["peak_rss_mib"]
    return out


def mix(args: argparse.Namespace) -> UpsertMix:
    """The workload's shape: ``--keys`` keys, 5% tombstones, 2% bad records."""
    return UpsertMix(keys=args.keys, tombstone_ratio=0.05, bad_ratio=0.02, value_size=32)


def ratios(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Our pipeline over the Delta job and over the raw consumer, where both were measured."""
    by = {r["system"]: r for r in rows}
    out: dict[str, float] = {}
    if "upsert-source" not in by:
        return out
    ours = by["upsert-source"]
    for other, label in (("delta-streaming", "delta"), (RAW, "raw")):
        if other in by:
            for col, tag in (("records_per_s", "e2e"), ("steady_records_per_s", "steady")):
                out[f"pipeline/{label} records/s {tag}"] = ours[col] / by[other][col]
    return out


def s(x: float | None) -> str:
    """A number of seconds for the table (``-`` for none; milliseconds below one second)."""
    if x is None:
        return "-"
    return f"{x * 1000:.1f}ms" if x < 1 else f"{x:.2f}s"


def table(rows: list[dict[str, Any]]) -> str:
    """The side-by-side table and the ratios, as printed."""
    lines = [
        f"{'system':<24} {'rec/s e2e':>10} {'rec/s steady':>13} {'first step':>11} "
        f"{'log end':>9} {'step p50':>9} {'step p99':>9} {'(n)':>5} {'peak RSS':>10} "
        f"{'recovery p50 (all)':>24}"
    ]
    for r in rows:
        rec = r.get("recovery_s")
        every = f" ({', '.join(f'{x:.1f}' for x in rec)})" if rec else ""
        label = r["system"] + (" @cluster" if r.get("spark") == "cluster" else "")
        lines.append(
            f"{label:<24} {r['records_per_s']:>10,.0f} {r['steady_records_per_s']:>13,.0f} "
            f"{s(r['to_first_step_s']):>11} {s(r['to_log_end_s']):>9} "
            f"{s(r['step_p50_s']):>9} {s(r['step_p99_s']):>9} {r['steps_timed']:>5} "
            f"{r['peak_rss_mib']:>6,.0f} MiB {s(r.get('recovery_p50_s')):>8}{every}"
        )
    lines.append("")
    for k, v in ratios(rows).items():
        lines.append(f"{k}: {v:.3g}x")
    for r in rows:
        if r.get("step_phases"):
            parts = [
                f"{k} {v['share']:.0%} (p50 {s(v['p50_s'])})" for k, v in r["step_phases"].items()
            ]
            lines.append(f"{r['system']}: a step's time went to " + ", ".join(parts))
    for r in rows:
        if cpu := r.get("cpu"):
            split = ", ".join(f"{k} {v:.2f}" for k, v in cpu["parts_core_s"].items())
            lines.append(
                f"{r['system']}: CPU ({cpu['window']}, {cpu['wall_s']:.1f}s): "
                f"{cpu['utilisation'] or 0:.0%} of {cpu['cores']} cores busy; core-s per "
                f"100,000 records: {cpu['core_s_per_100k_records'] or 0:.2f} on the machine, "
                f"{cpu['system_core_s_per_100k_records'] or 0:.2f} by the system and its broker "
                f"(core-s: {split})"
            )
    for r in rows:
        if r.get("recovery_p50_s") is not None:
            lines.append(f"{r['system']}: kill -> next sealed step p50 {r['recovery_p50_s']:.1f}s")
    return "\n".join(lines)


def main() -> int:
    """Run the comparison and print the table."""
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--keys", type=int, default=10_000)
    ap.add_argument("--kills", type=int, default=3)
    ap.add_argument("--max-records-per-step", type=int, default=20_000)
    ap.add_argument("--systems", default=f"{RAW},upsert-source,delta-streaming")
    ap.add_argument("--seed", type=int, default=1, help="of the topic's records")
    ap.add_argument("--spark", choices=("connect", "cluster"), default="connect")
    ap.add_argument("--work", type=Path, default=Path("/tmp/sut-compare"))
    ap.add_argument("--json", type=Path, help="write the numbers here")
    args = ap.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    backend = LocalBackend(1, args.work, "compare")
    backend.start(TOPIC, 3)
    rows = []
    try:
        t = time.monotonic()
        pairs = upsert_records(random.Random(args.seed), args.records, mix(args))
        smoke.produce(backend.bootstrap, TOPIC, pairs)
        ends = log_end(backend.bootstrap, TOPIC)
        print(f"produced {args.records:,} records in {time.monotonic() - t:.1f}s", flush=True)
        for name in args.systems.split(","):
            if name == RAW:
                rows.append(measure_raw(backend, ends, args.records, args.max_records_per_step))
            else:
                rows.append(measure(name, backend, args.work, ends, args))
            print(rows[-1], flush=True)
    finally:
        backend.stop(args.work)
    print()
    print(table(rows))
    if args.json:
        settings = {k: v for k, v in vars(args).items() if k not in ("work", "json")}
        doc = {"settings": settings, "systems": rows, "ratios": ratios(rows)}
        args.json.write_text(json.dumps(doc, indent=1, default=str) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
