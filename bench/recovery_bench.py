"""Recovery benchmark: how long a crash costs a system under test (kill -> next sealed step).

    .venv/bin/python bench/recovery_bench.py [--modes connect,local] [--seeds 1]
        [--runs runs-bench] [--analyze RUN_DIR ...]

For every Spark mode it makes real chaos runs (``sealcheck run --nemesis kill --interval 6``)
and, from each stored run, measures every crash: the time from the incarnation's exit (as the
supervisor recorded it) to the first observation of the store's ``data`` upper past the first
step the next incarnation sealed. The observer samples every 0.25 s, so each number is late by
up to that. ``--analyze`` measures runs already stored instead (any run: failpoint crashes
count too). Prints n, min, p50, p90 and max per mode; asserts nothing.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from measure import log_events  # noqa: E402

from sealcheck.rundir.history import History  # noqa: E402
from sealcheck.rundir.names import SUT_EXIT, log_of  # noqa: E402


def first_sealed_step(log: Path | None) -> int | None:
    """The step of the first step an incarnation sealed, from its log: our pipeline's first
    ``sealed`` event (``t``), the Delta job's first committed ``batch`` (its id is the step).
    None: none."""
    if log is None or not log.exists():
        return None
    for event in log_events(log.read_text(errors="replace")):
        if event["event"] == "sealed":
            return int(event["t"])
        if event["event"] == "batch":
            return int(event["batch"])
    return None


def recoveries(run_dir: Path) -> list[float]:
    """Seconds from each crashed incarnation's exit to the next incarnation's first sealed
    step becoming visible in the store (crashes followed by no sealed step are left out)."""
    history = History.load(run_dir / "history.jsonl")
    # a step is sealed when both collections are (the Delta job commits them one by one)
    seen = [
        (op["time"], min(op["value"].get("data", 0), op["value"].get("errors", 0)))
        for op in history.observations()
    ]
    out: list[float] = []
    exits = [
        op
        for op in history.ops
        if op["process"] == "supervisor" and op["f"] == SUT_EXIT and op["value"]["code"]
    ]
    for op in exits:
        nxt = op["value"]["incarnation"] + 1
        log = log_of(run_dir, nxt)
        step = first_sealed_step(run_dir / log if log is not None else None)
        if step is None:
            continue
        later = [t for t, upper in seen if t > op["time"] and upper > step]
        if later:
            out.append((later[0] - op["time"]) / 1e9)
    return out


def summary(label: str, values: list[float]) -> str:
    """One line: n, min, p50, p90, max."""
    if not values:
        return f"{label:>8}: no crash was followed by a sealed step"
    values = sorted(values)
    p90 = values[min(len(values) - 1, round(0.9 * (len(values) - 1)))]
    return (
        f"{label:>8}: n={len(values):3d}  min={values[0]:5.1f}s  "
        f"p50={statistics.median(values):5.1f}s  p90={p90:5.1f}s  max={values[-1]:5.1f}s"
    )


def run(runs: Path, mode: str, seed: int) -> Path:
    """One kill-only chaos run in ``mode``; its run directory."""
    flags = ["--no-progress", "--runs", str(runs), "--seed", str(seed), "--spark", mode]
    flags += ["--nemesis", "kill", "--interval", "6"]
    proc = subprocess.run(
        [sys.executable, "-m", "sealcheck", "run", *flags], cwd=ROOT, capture_output=True, text=True
    )
    run_dir = (runs / "latest").resolve()
    print(f"  {mode} seed {seed}: exit {proc.returncode}, {run_dir}", flush=True)
    return run_dir


def main() -> int:
    """Run (or analyze) and print the numbers."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--modes", default="connect,local")
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--runs", type=Path, default=ROOT / "runs-bench")
    parser.add_argument("--analyze", nargs="*", type=Path, default=None)
    args = parser.parse_args()
    if args.analyze is not None:
        values = [v for d in args.analyze for v in recoveries(d)]
        print(summary("runs", values))
        return 0
    results: dict[str, list[float]] = {}
    for mode in args.modes.split(","):
        for seed in range(1, args.seeds + 1):
            results.setdefault(mode, []).extend(recoveries(run(args.runs, mode, seed)))
    print("kill -> next sealed step (observer resolution 0.25 s):")
    for mode, values in results.items():
        print(summary(mode, values))
    return 0


if __name__ == "__main__":
    sys.exit(main())
