"""Where a chaos run's time goes, phase by phase, from its stored history (issue 52).

    .venv/bin/python bench/phases.py RUN_DIR [RUN_DIR ...]
    .venv/bin/python bench/phases.py --repeat 3 --runs /tmp/phases -- --system user-job-sqlite \\
        --nemesis kill,window --duration 60 --interval 15 --keys 200 --rate 100

With run directories, reads each; with ``--repeat N -- FLAGS``, first runs ``sealcheck run FLAGS``
N times (seeds 1..N unless FLAGS name one) under ``--runs``, then reads those. One row per run,
then the median of each column:

* **kafka**: run start to the run's set-up recorded (Kafka up, the topic made, services
  started);
* **first batch**: the first incarnation's start to its first sealed step (the job's own
  start-up: its JVM, Spark, its sink);
* **faults**: the fault period (``duration``), from the faults' start to the heal;
* **restarts**: each later incarnation's start to the output's next advance, summed (the
  job's own restarts; how many in brackets); those that overlap the fault period count here
  too, as the job's time, not the harness's;
* **catch-up**: the heal to the log end sealed (``caught-up``), of which **settle**: the
  output left unchanged to call it caught up (``settled_s``; 0 when the checkpoints or the
  bindings proved it);
* **export**: caught up to the run's ``took_s`` (stopping the job, the topic's dump, the
  output's export; the checkers and the report come after it, about a second here);
* **wall**: the run's ``took_s``; **harness**: wall minus faults, first batch and the restarts
  outside the fault period — the time Sealcheck adds to the job's own.

Nothing is asserted: the numbers are printed (``docs/scale.md`` keeps the table).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

NS = 1e9


@dataclass(frozen=True)
class Phases:
    """One run's phases, in seconds."""

    run: str
    kafka: float
    first_batch: float
    faults: float
    restarts: float
    restart_count: int
    restarts_outside: float
    catch_up: float
    settle: float
    export: float
    wall: float

    @property
    def harness(self) -> float:
        """Wall time minus the faults and the job's own start-ups and restarts."""
        return self.wall - self.faults - self.first_batch - self.restarts_outside


def phases(run_dir: Path) -> Phases:
    """The phases of the run stored in ``run_dir`` (its ``history.jsonl`` and ``test.json``)."""
    ops = [json.loads(line) for line in (run_dir / "history.jsonl").open() if line.strip()]
    meta = json.loads((run_dir / "test.json").read_text())

    def first(f: str, after: float = 0.0) -> dict[str, Any] | None:
        return next((o for o in ops if o.get("f") == f and o["time"] / NS >= after), None)

    def at(op: dict[str, Any] | None, default: float) -> float:
        return op["time"] / NS if op is not None else default

    wall = float(meta.get("took_s") or ops[-1]["time"] / NS)
    setup = at(first("setup"), 0.0)
    starts = [o["time"] / NS for o in ops if o.get("f") == "sut-start"]
    seen = sorted(
        (o["time"] / NS, int(o["value"].get("data", 0))) for o in ops if o.get("f") == "uppers"
    )

    def next_advance(t: float) -> float | None:
        """When the output next sealed a step after ``t`` (its ``data`` upper past the one
        it had then)."""
        before = max((d for at, d in seen if at <= t), default=0)
        return next((at for at, d in seen if at > t and d > before), None)

    faults_at = at(first("faults-start"), setup)
    heal_at = at(first("heal", faults_at), faults_at)
    caught = first("caught-up")
    caught_at = at(caught, heal_at)
    first_seal = next_advance(starts[0]) if starts else None
    restarts = [(s, next_advance(s)) for s in starts[1:]]
    spans = [(s, e) for s, e in restarts if e is not None]
    outside = sum(e - max(s, heal_at) for s, e in spans if e > heal_at)
    return Phases(
        run=str(run_dir),
        kafka=round(setup, 1),
        first_batch=round((first_seal - starts[0]) if first_seal and starts else 0.0, 1),
        faults=round(heal_at - faults_at, 1),
        restarts=round(sum(e - s for s, e in spans), 1),
        restart_count=len(spans),
        restarts_outside=round(outside, 1),
        catch_up=round(caught_at - heal_at, 1),
        settle=float((caught or {}).get("value", {}).get("settled_s") or 0.0),
        export=round(wall - caught_at, 1),
        wall=round(wall, 1),
    )


COLUMNS = ("kafka", "first_batch", "faults", "restarts", "catch_up", "settle", "export", "wall")


def table(rows: list[Phases]) -> str:
    """The rows and their medians as a Markdown table."""
    head = [*COLUMNS, "harness"]
    out = ["| run | " + " | ".join(head) + " |", "|" + " --- |" * (len(head) + 1)]

    def cells(p: Phases) -> list[str]:
        d = asdict(p)
        values = [f"{d[c]:.1f}" for c in COLUMNS]
        values[COLUMNS.index("restarts")] += f" ({p.restart_count})"
        return [*values, f"{p.harness:.1f}"]

    for p in rows:
        out.append(
            f"| {Path(p.run).parent.name}/{Path(p.run).name} | " + " | ".join(cells(p)) + " |"
        )
    if len(rows) > 1:
        med = [statistics.median(asdict(p)[c] for p in rows) for c in COLUMNS]
        harness = statistics.median(p.harness for p in rows)
        out.append("| **median** | " + " | ".join(f"{m:.1f}" for m in med) + f" | {harness:.1f} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    """Run (optionally) and print the phase table."""
    args = sys.argv[1:] if argv is None else argv
    flags: list[str] = []
    if "--" in args:
        i = args.index("--")
        args, flags = args[:i], args[i + 1 :]
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("run_dirs", nargs="*", type=Path)
    p.add_argument("--repeat", type=int, default=0, help="run `sealcheck run FLAGS` N times first")
    p.add_argument("--runs", type=Path, default=Path("/tmp/sealcheck-phases"))
    opts = p.parse_args(args)
    dirs = list(opts.run_dirs)
    for n in range(1, opts.repeat + 1):
        name = f"phases-{n}"
        seed = [] if "--seed" in flags else ["--seed", str(n)]
        cmd = [sys.executable, "-m", "sealcheck", "run", *flags, *seed, "--runs", str(opts.runs)]
        subprocess.run([*cmd, "--name", name], check=False, stdout=subprocess.DEVNULL)
        dirs += [d for d in sorted((opts.runs / name).glob("2*")) if (d / "test.json").exists()][
            -1:
        ]
    if not dirs:
        p.error("give run directories, or --repeat N -- FLAGS")
    print(table([phases(d) for d in dirs]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
