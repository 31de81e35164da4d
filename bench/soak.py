"""False-positive soak: the default chaos run, N times with consecutive seeds, on the correct
pipeline. Prints each run's verdict and time as it ends, then how many were valid / invalid /
unknown (and why not valid). Every run is a real ``sealcheck run``; nothing is asserted about
time. A summary is rewritten after every run, so a stopped soak still leaves one.

    .venv/bin/python bench/soak.py [--runs 20] [--first-seed 1] [--archive runs-soak] [-- FLAGS]

Flags after ``--`` go to every ``sealcheck run`` (e.g. ``-- --duration 30``). Exit code: 0 if
every run was valid, 1 if one was invalid, 2 if one was unknown (the worst wins).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORDS = {0: "valid", 1: "invalid", 2: "unknown"}


@dataclass
class SoakRun:
    """One run of the soak."""

    seed: int
    verdict: str
    took_s: float
    run: str
    why: list[str]


def run_once(archive: Path, seed: int, extra: list[str]) -> SoakRun:
    """One ``sealcheck run``; its verdict (from the exit code), time and run directory."""
    start = time.monotonic()
    flags = ["--no-progress", "--runs", str(archive), "--seed", str(seed), *extra]
    proc = subprocess.run(
        [sys.executable, "-m", "sealcheck", "run", *flags],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    took = time.monotonic() - start
    verdict = WORDS.get(proc.returncode, f"harness exit {proc.returncode}")
    run_dir = (archive / "latest").resolve()
    why: list[str] = []
    results = run_dir / "results.json"
    if verdict != "valid" and results.exists():
        doc = json.loads(results.read_text())
        why += doc.get("inputs", {}).get("problems", [])
        for name, r in doc.get("checkers", {}).items():
            if r.get("valid") is not True:
                why.append(f"{name}: {r.get('anomaly_counts') or r.get('error')}")
    elif verdict != "valid":
        why.append(proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "no output")
    return SoakRun(seed, verdict, round(took, 1), str(run_dir), why)


def main() -> int:
    """Run the soak; print each run and the summary."""
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    own = argv[: argv.index("--")] if "--" in argv else argv
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--first-seed", type=int, default=1)
    ap.add_argument("--archive", type=Path, default=Path("runs-soak"), help="the archive of runs")
    args = ap.parse_args(own)
    summary_path = args.archive / "soak.json"
    args.archive.mkdir(parents=True, exist_ok=True)
    runs: list[SoakRun] = []
    counts: Counter[str] = Counter()
    try:
        for seed in range(args.first_seed, args.first_seed + args.runs):
            one = run_once(args.archive, seed, extra)
            runs.append(one)
            counts[one.verdict] += 1
            print(
                f"seed {seed:>4}: {one.verdict:<8} {one.took_s:>6}s  {one.run}"
                + "".join(f"\n      {w}" for w in one.why),
                flush=True,
            )
            doc = {"extra_flags": extra, "counts": counts, "runs": [asdict(r) for r in runs]}
            summary_path.write_text(json.dumps(doc, indent=1))
    except KeyboardInterrupt:
        print("soak: interrupted; summary of the runs that finished:", file=sys.stderr)
    times = sorted(r.took_s for r in runs)
    spread = (
        f"; per run {times[0]:.0f}-{times[-1]:.0f}s (median {times[len(times) // 2]:.0f}s)"
        if times
        else ""
    )
    print(
        f"soak: {len(runs)} runs: {counts['valid']} valid, {counts['invalid']} invalid, "
        f"{counts['unknown']} unknown{spread}; summary: {summary_path}"
    )
    if counts["invalid"]:
        return 1
    return 0 if counts["valid"] == len(runs) and runs else 2


if __name__ == "__main__":
    sys.exit(main())
