"""``sealcheck selftest``: does the default run catch every deliberate bug?

Every variant of a system under test (its ``broken_modes``, and the correct one first) runs
with the *default* run configuration for seeds 1..N — real ``sealcheck run`` processes, stored
in the archive like any run. The detection matrix says, per variant: in how many seeds it was
caught (verdict invalid), by which checkers, and the time to first detection (from the start
of the fault phase to the sealing of the first step a checker found wrong, or to the observed
uppers it found wrong; 0 when that was during the warm-up; the end of the run when the anomaly
has no time, e.g. a pipeline that never caught up). The correct variant must
never be flagged. With chosen checkers (``-- --checkers prefix``) a run counts as valid when
every checker that ran was (its verdict is unknown: the others did not run), so the matrix is
that subset's. The matrix is rewritten to ``selftest.json`` after every run, so an
interrupted self-test leaves its numbers, and every finished run is appended to the ledger
``selftest.jsonl`` (variant, seed, run flags, run directory): started again on the same archive
with the same flags, the self-test takes the runs it already has from the ledger and runs only
the rest (``--fresh`` runs everything again).

Exit code: 0 when the correct variant (and every variant the system calls harmless:
``harmless_modes``) was valid in every seed and every other one was caught in at least
``--min-caught`` seeds, else 1.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sealcheck.harness.campaigns.child_run import torn_down
from sealcheck.harness.campaigns.commands import EXIT_BAD_ARGS, EXIT_INVALID, EXIT_VALID, positive

CORRECT = "correct"


@dataclass
class Cell:
    """One variant over every seed."""

    variant: str
    what: str
    runs: int = 0
    caught: int = 0
    unknown: int = 0
    by: dict[str, int] = field(default_factory=dict)  # checker -> runs it failed
    detect_s: list[float] = field(default_factory=list)
    run_dirs: list[str] = field(default_factory=list)

    def row(self) -> str:
        """One line of the matrix."""
        by = ", ".join(f"{k} {v}" for k, v in Counter(self.by).most_common()) or "-"
        med = f"{statistics.median(self.detect_s):6.1f}s" if self.detect_s else "     - "
        unknown = f" ({self.unknown} unknown)" if self.unknown else ""
        return f"{self.variant:<30} {self.caught:>2}/{self.runs:<2}{unknown:<12} {med}  {by}"


def detection(run_dir: Path) -> tuple[bool | None, list[str], float | None]:
    """A stored run's verdict, the checkers that failed, and seconds from the fault phase's
    start to the first moment the history showed an anomaly (:func:`_seen_ns`; the end of the
    run when none has a time; None: no verdict)."""
    try:
        results = json.loads((run_dir / "results.json").read_text())
    except (OSError, ValueError):
        return None, [], None
    failed = [n for n, c in results.get("checkers", {}).items() if c.get("valid") is False]
    verdict = results.get("valid")
    if verdict is not False:
        return _chosen(results) if verdict == "unknown" else verdict, failed, None
    times = [
        t
        for c in results["checkers"].values()
        for a in c.get("anomalies", [])
        if (t := _seen_ns(a.get("context") or {})) is not None
    ]
    start, end = 0, None
    with (run_dir / "history.jsonl").open() as fh:
        for line in fh:
            if '"warmed-up"' in line or '"inputs"' in line:
                op = json.loads(line)
                if op["f"] == "warmed-up":
                    start = op["time"]
                else:
                    end = op["time"]
    first = min(times) if times else end
    return False, failed, None if first is None else max(0.0, (first - start) / 1e9)


def _chosen(results: dict[str, Any]) -> bool | None:
    """The verdict of a run whose checkers were chosen (``-- --checkers prefix``): valid when
    every checker that ran and applied was valid on complete inputs — the self-test of that
    subset — else None (unknown). A run of every checker that is unknown stays unknown."""
    if not results.get("not_run") or not results.get("inputs", {}).get("complete"):
        return None
    ran = [c.get("valid") for c in results.get("checkers", {}).values()]
    judged = [v for v in ran if v in (True, False, "unknown")]
    return True if judged and all(v is True for v in judged) else None


def _seen_ns(context: dict[str, Any]) -> int | None:
    """When the history first showed an anomaly: the sealing of the step it is in
    (``sealed_by_ns``), or the observation of uppers it is about (``observed.time``)."""
    sealed = context.get("sealed_by_ns")
    if isinstance(sealed, int):
        return sealed
    observed = context.get("observed")
    seen = observed.get("time") if isinstance(observed, dict) else None
    return seen if isinstance(seen, int) else None


def _run(runs_dir: Path, variant: str, seed: int, extra: list[str]) -> Path | None:
    flags = ["--no-progress", "--runs", str(runs_dir), "--seed", str(seed), *extra]
    flags += ["--name", f"selftest-{variant}"]
    if variant != CORRECT:
        flags += ["--broken", variant]
    proc = subprocess.Popen(
        [sys.executable, "-m", "sealcheck", "run", *flags],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        output, _ = proc.communicate()
    except BaseException:  # Ctrl-C or SIGTERM: the run tears down before the self-test ends
        torn_down(proc, runs_dir)
        raise
    latest = runs_dir / "latest"
    if proc.returncode not in (0, 1, 2) or not latest.exists():
        tail = "\n".join((output or "").splitlines()[-5:])
        print(f"  {variant} seed {seed}: the harness failed (exit {proc.returncode}):\n{tail}")
        return None
    return latest.resolve()


def _ledger(path: Path, flags: list[str]) -> dict[tuple[str, int], Path]:
    """Finished runs of an earlier self-test on this archive with the same run flags."""
    done: dict[tuple[str, int], Path] = {}
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return done
    for line in lines:
        try:
            rec = json.loads(line)
            key = (str(rec["variant"]), int(rec["seed"]))
            same = rec["flags"] == flags
            run_dir = Path(rec["run_dir"])
        except (ValueError, KeyError, TypeError):
            continue  # a line cut by a crash: that run is simply done again
        if same and (run_dir / "results.json").is_file():
            done[key] = run_dir
    return done


def run_selftest(args: argparse.Namespace) -> int:
    """Run the matrix (or list the variants)."""
    from sealcheck.systems.registry import SystemNotFound, system

    try:
        sut = system(args.system)
    except SystemNotFound as exc:
        print(f"sealcheck selftest: {exc}")
        return EXIT_BAD_ARGS
    harmless = {CORRECT, *sut.harmless_modes}
    modes = {CORRECT: "the system as it is (must never be flagged)", **sut.broken_modes}
    if args.list:
        for name, what in modes.items():
            tag = " (expected valid)" if name in harmless and name != CORRECT else ""
            print(f"{name:<30} {what}{tag}")
        return EXIT_VALID
    chosen = list(modes) if not args.variants else [CORRECT, *args.variants.split(",")]
    unknown = [v for v in chosen if v not in modes]
    if unknown:
        print(f"sealcheck selftest: unknown variant(s) {unknown}; see `sealcheck selftest --list`")
        return EXIT_BAD_ARGS
    cells = {v: Cell(v, modes[v]) for v in dict.fromkeys(chosen)}
    flags = ["--system", args.system, *args.run_flags]  # every run is of the system listed
    out = Path(args.runs) / "selftest.json"
    ledger = out.with_suffix(".jsonl")
    out.parent.mkdir(parents=True, exist_ok=True)
    done = {} if args.fresh else _ledger(ledger, flags)
    started = time.monotonic()
    for seed in range(1, args.seeds + 1):
        for variant, cell in cells.items():
            run_dir = done.get((variant, seed))
            again = " (from the ledger)" if run_dir else ""
            if run_dir is None:
                run_dir = _run(Path(args.runs), variant, seed, flags)
                if run_dir is not None:
                    rec = {"variant": variant, "seed": seed, "flags": flags}
                    with ledger.open("a") as fh:
                        fh.write(json.dumps({**rec, "run_dir": str(run_dir)}) + "\n")
            verdict, failed, took = detection(run_dir) if run_dir else (None, [], None)
            cell.runs += 1
            cell.unknown += verdict is None
            if verdict is False:
                cell.caught += 1
                for name in failed:
                    cell.by[name] = cell.by.get(name, 0) + 1
                if took is not None:
                    cell.detect_s.append(round(took, 1))
            cell.run_dirs.append(str(run_dir))
            word = {True: "valid", False: "INVALID", None: "unknown"}[verdict]
            print(f"  seed {seed} {variant:<30} {word:<8} {', '.join(failed)}{again}", flush=True)
            out.write_text(json.dumps([asdict(c) for c in cells.values()], indent=1))
    # the claim is the default run's only when no run flag was given: say which it is
    config = "default run configuration" if not args.run_flags else " ".join(args.run_flags)
    print(f"\ndetection matrix ({args.seeds} seeds, {config}, {time.monotonic() - started:.0f}s):")
    print(f"{'variant':<30} caught           median  by checker (runs)")
    for cell in cells.values():
        print(cell.row())
    ok = all(c.caught == 0 and c.unknown == 0 for v, c in cells.items() if v in harmless)
    ok &= all(
        c.caught >= min(args.min_caught, c.runs) for v, c in cells.items() if v not in harmless
    )
    print(f"matrix saved to {out}")
    return EXIT_VALID if ok else EXIT_INVALID


def add_command(sub: Any) -> None:
    """Register ``selftest`` on the CLI's subcommands."""
    p = sub.add_parser("selftest", help="run every deliberate bug variant; print the matrix")
    p.add_argument("--list", action="store_true", help="list the variants and stop")
    p.add_argument("--seeds", type=positive, default=1, help="seeds 1..N per variant (default 1)")
    p.add_argument(
        "--system",
        default="upsert-source",
        help="the system under test: a registered name or package.module:Factory",
    )
    p.add_argument("--variants", default=None, help="comma-separated broken variants only")
    p.add_argument("--runs", default="runs-selftest", help="the archive for the runs")
    p.add_argument(
        "--fresh", action="store_true", help="ignore the ledger of an earlier self-test here"
    )
    p.add_argument("--min-caught", type=int, default=4, help="seeds each bug must be caught in")
    p.add_argument("run_flags", nargs="*", help="after --: flags for every `sealcheck run`")
    p.set_defaults(func=run_selftest)
