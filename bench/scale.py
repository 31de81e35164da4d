"""Scale: ``--records`` upserts over ``--keys`` keys through our pipeline end to end, then the
checkers — times, the store's size, memory, and the verdict.

    .venv/bin/python bench/scale.py [--records 10000000] [--keys 1000000]
        [--max-records-per-step 100000] [--retain-steps 2] [--hold-steps 20]
        [--compact-every 2] [--seed 1]
        [--work /tmp/sealcheck-scale] [--json PATH]

1. **produce**: one local broker, a topic of 3 partitions, the records (numpy, seeded by
   ``--seed``: uniform keys ``k<n>``, 5% tombstones, 2% bad records — a null key, a value that
   is not JSON, a value that is not UTF-8; JSON values of ~32 bytes) with ``acks=all`` and
   idempotence; a key's partition is ``n % 3``. Every acknowledgement's offset is kept.
2. **pipeline**: deployed by its descriptor as a chaos run deploys it (SQLite store, Spark
   Connect server), one incarnation from an empty store until ``data`` and ``errors`` seal a
   step whose bindings reach the log end; uppers sampled every 0.05 s, each change kept as the
   observer's ``uppers`` op.
   Peak RSS of its tree (incarnation + Spark Connect JVM, sampled every 0.2 s from ``/proc``),
   the store's size on disk. Then **rehydration**: the incarnation stopped, a new one started,
   its ``rehydrated`` event timed (the state of every live key read back from the store).
3. **run directory**, laid out as the harness lays out a run: ``topic.parquet`` (the topic
   read back from Kafka by the harness's ``read_topic``), ``export/`` (the descriptor's export) and
   ``acks.arrows`` (a row per acknowledged write), ``history.jsonl`` (the observer's uppers
   and ``captured`` ops, ``log-end``, ``caught-up`` and the final ``inputs`` manifest), and
   ``captures.arrows``: every sealed step captured while catching up, right after its upper
   was seen, before compaction could merge it (as a chaos run's observer does), so that
   ``sealed_state`` judges every step one by one.
4. **checkers**: in a child process (its peak RSS is theirs alone): reading the inputs
   (``load_run`` + ``prepare``) and judging (``run_checkers``) — ``sealcheck.checkers.check_run``
   in two
   timed halves. The verdict must be VALID; anything else is printed with its reasons.

Prints every number, last the whole bench's wall time (``end_to_end_s``); ``--json`` writes
them; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import polars as pl  # noqa: E402
from measure import (  # noqa: E402
    MIB,
    StepClock,
    TreeRss,
    log_events,
    step_phases,
    step_stats,
    used_cpu_s,
    vm_hwm,
)
from scale_records import PARTITIONS, TOPIC, produce, workload  # noqa: E402
from scale_run import write_history  # noqa: E402

from sealcheck.infra.local import LocalBackend  # noqa: E402
from sealcheck.infra.topic import log_end, read_topic  # noqa: E402
from sealcheck.rundir.captures import CaptureWriter  # noqa: E402
from sealcheck.rundir.files import ACKS, CAPTURES, UPDATES, write_topic  # noqa: E402
from sealcheck.rundir.files import TOPIC as TOPIC_FILE  # noqa: E402
from sealcheck.systems import system  # noqa: E402
from sealcheck.systems.api import CapturesSteps, Settings  # noqa: E402


def run_pipeline(
    backend: LocalBackend, work: Path, run_dir: Path, args: argparse.Namespace
) -> dict[str, Any]:
    """Catch up from an empty store, then restart once (rehydration); numbers, the
    observer's samples (``observed``: ``(ns, uppers)``) and its captures (``captured``:
    ``(ns, captured op's value)``; every sealed step captured into ``run_dir/captures.arrows``
    right after its upper is seen, as the harness's observer does)."""
    ends = log_end(backend.bootstrap, TOPIC)
    settings = Settings(TOPIC, args.max_records_per_step)
    options = {"retain_steps": args.retain_steps, "compact_every": args.compact_every,
               "hold_steps": args.hold_steps}  # fmt: skip
    logs = work / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    rss = TreeRss(lambda: [pid for b in backend.brokers if (pid := b.ident) is not None])
    rss.start()
    dep = system("upsert-source", options).deploy(backend, settings, work / "pipeline", logs)
    out: dict[str, Any] = {"log_end": ends}
    t = time.monotonic()
    dep.start()
    out["spark_server_ready_s"] = time.monotonic() - t
    incs: list[Any] = []
    observed: list[tuple[int, dict[str, int]]] = []
    captured: list[tuple[int, dict[str, Any]]] = []
    captures = CaptureWriter(run_dir / CAPTURES)
    since_captured: dict[str, int] = {}

    def capture() -> None:  # sealcheck.harness.run.observer.Observer._capture, unthreaded
        if not isinstance(dep, CapturesSteps):
            return
        t = time.monotonic()
        got = dep.capture(dict(since_captured))
        if got is None or not (got.ranges or got.missed):
            return
        if got.ranges:
            captures.write(got)
        captured.append((time.monotonic_ns(), got.op_value()))
        for c, (_, hi) in [*got.missed.items(), *got.ranges.items()]:
            since_captured[c] = max(since_captured.get(c, 0), hi)
        out["capture_s"] = out.get("capture_s", 0.0) + time.monotonic() - t

    try:
        inc = backend.incarnation(dep.launch(0), "pipeline-0", logs / "0.log", work / "fp")
        clock = StepClock(lambda: sealed(dep.uppers()))
        inc.start()
        incs.append(inc)

        def caught_up() -> bool:
            if (u := dep.uppers()) and (not observed or observed[-1][1] != u):
                observed.append((time.monotonic_ns(), u))
                capture()
                return (p := dep.progress()) is not None and p.covers(ends)
            return False

        timeout = max(900.0, args.records / 2_000)
        total = clock.until(caught_up, timeout, "the log end sealed")
        first = clock.first or total
        out.update(to_first_step_s=first, catch_up_s=total, **step_stats(clock.step_s))
        out["records_per_s"] = args.records / total
        out["steady_records_per_s"] = args.records / max(total - first, 1e-9)
        out["catch_up_rss"] = {"peak_rss_mib": round(rss.peak / MIB, 1)}
        out["catch_up_rss"]["each_mib"] = {k: round(v / MIB, 1) for k, v in rss.each.items()}
        out["stop_exit"] = inc.stop(60)  # its log now holds the last step's event
        capture()  # the last steps, as the observer's last sample does
        captures.close()
        events = log_events(inc.log_text())
        seals = [e for e in events if e.get("event") == "sealed"]
        out["steps"] = len(seals)
        out["read_ahead"] = sum(1 for e in seals if e.get("read_ahead"))
        out["step_phases"] = step_phases(events)
        out["sealed_took_s_sum"] = sum(float(e.get("took_s", 0)) for e in seals)
        out["live_keys"] = seals[-1].get("keys") if seals else None
        compacted = [e for e in events if e.get("event") == "compacted"]
        out["compactions"] = len(compacted)
        out["compaction_s_sum"] = sum(e.get("took_s", 0.0) for e in compacted)
        # the steps the restart reads apart, beside the merged ones: upper - since
        out["since_at_restart"] = compacted[-1]["since"] if compacted else 0
        out["store_bytes"] = store_bytes(Path(dep.store))
        t = time.monotonic()
        inc = backend.incarnation(dep.launch(1), "pipeline-1", logs / "1.log", work / "fp")
        inc.start()
        incs.append(inc)
        while not (done := [e for e in log_events(inc.log_text()) if e["event"] == "rehydrated"]):
            if not inc.alive or time.monotonic() - t > 600:
                raise RuntimeError(f"no rehydrated event; log:\n{inc.log_text()[-2000:]}")
            time.sleep(0.1)
        out["restart_to_rehydrated_s"] = time.monotonic() - t
        out["rehydrate"] = {k: done[0].get(k) for k in ("took_s", "keys", "errors", "t")}
        inc.stop(60)
    finally:
        captures.close()
        for i in incs:
            i.stop(10)
        dep.stop()
        out["rss"] = rss.stop()
    out["observed"] = observed
    out["captured"] = captured
    out["deployment"] = dep
    return out


def sealed(uppers: dict[str, int] | None) -> int:
    """The lower of the ``data`` and ``errors`` uppers (0 while there is no store)."""
    return min(uppers.get("data", 0), uppers.get("errors", 0)) if uppers else 0


def store_bytes(db: Path) -> int:
    """The SQLite store's bytes on disk (the database, its WAL and shared memory)."""
    return sum(p.stat().st_size for p in db.parent.glob(db.name + "*") if p.is_file())


def judge(run_dir: Path) -> dict[str, Any]:
    """In a child process: read the inputs, run every checker; times, verdict, peak RSS."""
    from sealcheck.checkers import RunInputError, load_run, run_checkers

    t0, cpu0 = time.monotonic(), used_cpu_s()
    try:
        run = load_run(run_dir)
        run.prepare()
    except RunInputError as exc:
        return {"verdict": "unknown", "why": [str(exc)], "peak_rss_mib": vm_hwm() / MIB}
    load_s = time.monotonic() - t0
    t0 = time.monotonic()
    result = run_checkers(run)
    check_s = time.monotonic() - t0
    verdict = {True: "VALID", False: "INVALID", None: "UNKNOWN"}[result.valid]
    why = list(result.input_problems)
    for name, r in result.checkers.items():
        if r.valid is not True:
            why.append(f"{name}: valid={r.valid} {r.anomaly_counts} {r.error or ''}".strip())
            why += [f"  {a.kind} key={a.key} step={a.step} {a.detail}" for a in r.anomalies[:3]]
    return {
        "verdict": verdict,
        "why": why,
        "load_s": load_s,
        "check_s": check_s,
        "checkers": {n: {"took_s": r.took_s, "valid": r.valid} for n, r in result.checkers.items()},
        "records": run.classified().height,
        "cpu_s": used_cpu_s() - cpu0,  # every thread's, reading and judging
        "cores": os.cpu_count() or 1,
        "peak_rss_mib": vm_hwm() / MIB,
    }


def main() -> int:
    """Produce, catch up, lay out the run, judge; print every number."""
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--records", type=int, default=10_000_000)
    ap.add_argument("--keys", type=int, default=1_000_000)
    ap.add_argument("--max-records-per-step", type=int, default=100_000)
    ap.add_argument("--retain-steps", type=int, default=2, help="0: never compact")
    ap.add_argument(
        "--hold-steps",
        type=int,
        default=20,
        help="steps kept for the captures' read hold, as in a chaos run (0: no hold)",
    )
    ap.add_argument("--compact-every", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--work", type=Path, default=Path("/tmp/sealcheck-scale"))
    ap.add_argument("--json", type=Path, help="write the numbers here")
    args = ap.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    run_dir = args.work / "run"
    run_dir.mkdir(parents=True)
    out: dict[str, Any] = {"settings": {k: str(v) for k, v in vars(args).items()}}
    t0_ns = time.monotonic_ns()
    frame = workload(args.records, args.keys, args.seed)
    out["generate_s"] = (time.monotonic_ns() - t0_ns) / 1e9
    backend = LocalBackend(1, args.work, "scale")
    backend.start(TOPIC, PARTITIONS)
    try:
        t = time.monotonic()
        offsets, acked, failed = produce(backend.bootstrap, frame, t0_ns)
        out["produce_s"] = time.monotonic() - t
        out["failed_writes"] = failed
        print(
            f"produce: {args.records:,} records over {args.keys:,} keys in {out['produce_s']:.1f}s"
            f" = {args.records / out['produce_s']:,.0f} records/s ({failed} not acknowledged;"
            f" generating them {out['generate_s']:.1f}s)",
            flush=True,
        )
        pipe = run_pipeline(backend, args.work, run_dir, args)
        print_pipeline(pipe, args)
        t = time.monotonic()
        topic = read_topic(backend.bootstrap, TOPIC, pipe["log_end"])  # as the harness does
        rows = topic.num_rows
        write_topic(topic, run_dir / TOPIC_FILE)
        del topic
        out["topic_dump_s"] = time.monotonic() - t
    finally:
        backend.stop(args.work)
    t = time.monotonic()
    pipe.pop("deployment").export(run_dir)
    out["export_s"] = time.monotonic() - t
    updates = pl.scan_parquet(run_dir / UPDATES).select(pl.len()).collect()
    print(
        f"run dir: topic dump {rows:,} rows in {out['topic_dump_s']:.1f}s; export "
        f"{updates.item():,} updates in {out['export_s']:.1f}s",
        flush=True,
    )
    t = time.monotonic()
    frame = frame.with_columns(pl.Series("offset", offsets), pl.Series("acked_ns", acked))
    observed, captured = pipe.pop("observed"), pipe.pop("captured")
    write_history(run_dir, frame, observed, pipe["log_end"], pipe["catch_up_s"], t0_ns, captured)
    out["history_s"] = time.monotonic() - t
    out["history_mb"] = (run_dir / "history.jsonl").stat().st_size / 1e6
    out["acks_mb"] = (run_dir / ACKS).stat().st_size / 1e6 if (run_dir / ACKS).exists() else 0.0
    caught = run_dir / CAPTURES
    out["captures_mb"] = caught.stat().st_size / 1e6 if caught.exists() else 0.0
    print(
        f"history: {out['history_mb']:,.1f} MB and acknowledgements {out['acks_mb']:,.0f} MB "
        f"in {out['history_s']:.1f}s; captures of the "
        f"sealed steps: {len(captured)} reads taking {pipe.get('capture_s', 0.0):.1f}s, "
        f"{out['captures_mb']:,.0f} MB",
        flush=True,
    )
    del frame
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        judged = pool.apply(judge, (run_dir,))
    out["pipeline"], out["checkers"] = pipe, judged
    out["end_to_end_s"] = (time.monotonic_ns() - t0_ns) / 1e9
    print_checkers(judged)
    print(
        f"end to end {out['end_to_end_s']:.1f}s: generating and producing the records, catching "
        f"up, the restart ({pipe['restart_to_rehydrated_s']:.1f}s), the run directory and the "
        "checkers",
        flush=True,
    )
    if args.json:
        args.json.write_text(json.dumps(out, indent=1, default=str) + "\n")
        print(f"wrote {args.json}")
    return 0


def print_pipeline(p: dict[str, Any], args: argparse.Namespace) -> None:
    """The pipeline's numbers."""
    alone = sorted(p["rss"]["peak_rss_each_mib"].items())
    each = ", ".join(f"{k} {v:,.0f}" for k, v in alone if v >= 1)  # not a spark-submit's getconf
    print(
        f"pipeline: Spark Connect server ready in {p['spark_server_ready_s']:.1f}s; first step "
        f"{p['to_first_step_s']:.1f}s; log end sealed in {p['catch_up_s']:.1f}s = "
        f"{p['records_per_s']:,.0f} records/s ({p['steady_records_per_s']:,.0f} after the first "
        f"step)\n  {p['steps']} steps of up to {args.max_records_per_step:,} records (step time "
        f"p50 {p['step_p50_s'] or 0:.2f}s, p99 {p['step_p99_s'] or 0:.2f}s; the incarnation's "
        f"own took_s sums to {p['sealed_took_s_sum']:.1f}s), {p['live_keys'] or 0:,} live keys, "
        f"{p['compactions']} compactions taking {p['compaction_s_sum']:.1f}s (retain "
        f"{args.retain_steps}, hold up to {args.hold_steps}, every {args.compact_every}; "
        f"since {p['since_at_restart']} of upper {p['steps']} at the restart)\n  store on disk "
        f"{p['store_bytes'] / MIB:,.0f} MiB; peak RSS of "
        f"the tree catching up {p['catch_up_rss']['peak_rss_mib']:,.0f} MiB, with the restart "
        f"{p['rss']['peak_rss_mib']:,.0f} MiB (each alone: {each})\n  rehydration: restart -> "
        f"rehydrated {p['restart_to_rehydrated_s']:.1f}s, of which reading the state "
        f"{p['rehydrate']['took_s']}s for {p['rehydrate']['keys']:,} keys",
        flush=True,
    )
    if p.get("step_phases"):
        parts = [
            f"{k} {v['share']:.0%} (p50 {v['p50_s']:.2f}s)" for k, v in p["step_phases"].items()
        ]
        print(
            "  a step's time went to " + ", ".join(parts) + f"; {p.get('read_ahead', 0)} of "
            f"{p['steps']} steps' records read ahead (while the step before committed)",
            flush=True,
        )


def print_checkers(j: dict[str, Any]) -> None:
    """The checkers' numbers and the verdict (with its reasons unless VALID)."""
    if "checkers" in j:
        for name, c in j["checkers"].items():
            print(f"  {name:<16} {c['took_s']:6.2f}s  valid={c['valid']}")
        total = j["load_s"] + j["check_s"]
        print(
            f"checkers: reading the inputs {j['load_s']:.1f}s ({j['records']:,} records), judging "
            f"{j['check_s']:.1f}s, together {total:.1f}s; peak RSS {j['peak_rss_mib']:,.0f} MiB"
        )
        if "cpu_s" in j:
            cores = j["cores"]
            print(
                f"  CPU {j['cpu_s']:.1f} core-s, {j['cpu_s'] / (total * cores):.0%} of {cores} "
                "cores while reading and judging"
            )
    print(f"verdict: {j['verdict']}")
    for line in j["why"]:
        print(f"  {line}")


if __name__ == "__main__":
    raise SystemExit(main())
