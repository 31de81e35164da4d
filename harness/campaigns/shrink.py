"""``sealcheck shrink RUN_DIR``: reduce an INVALID run's fault schedule to a smallest one that
still shows the same kind of anomaly.

1. **Target.** The anomaly kind to keep is one ``(checker, kind)`` pair of the run's results
   (``--kind checker:kind``; by default the most frequent one).
2. **Units.** The planned actions, with each interval's end joined to its start (a pause and
   its resume, a zombie's start and its release go or stay together).
3. **Delta debugging** (Zeller's ddmin) over the units: try halves, then quarters…, and their
   complements; keep any smaller schedule that still reproduces.
4. **Simpler values.** Then a shorter run: the duration cut to just after the last action.
5. **Confirm.** The minimal schedule is run again; its reproduction rate is hits / runs.

Timing varies from run to run, so a candidate is run up to ``runs_per_candidate`` times and
counts as reproducing at its first hit. Every outcome is appended to
``RUN_DIR/shrink/outcomes.jsonl`` under the hash of its schedule and duration, so an
interrupted shrink resumes without re-running what it already knows. The result is
``RUN_DIR/shrink/minimal/test.json`` — replayable as is with ``sealcheck run --replay`` — and
``RUN_DIR/shrink/summary.json``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from sealcheck.harness.campaigns.commands import EXIT_BAD_ARGS, EXIT_INVALID, EXIT_VALID, positive
from sealcheck.harness.run.config import ConfigError, TestConfig, build_config
from sealcheck.nemeses import Action

T = TypeVar("T")

#: Runs a candidate: (config, schedule) -> {"valid", "kinds": [[checker, kind], ...], "run_dir"}
Execute = Callable[[TestConfig, list[Action]], dict[str, Any]]


class ShrinkError(ValueError):
    """The run cannot be shrunk (the message says why and what to do)."""


def anomaly_kinds(results: dict[str, Any]) -> list[tuple[str, str]]:
    """Every ``(checker, kind)`` of a ``results.json``, the most frequent first (ties by
    name): a liveness complaint with a few anomalies comes after a safety violation with
    thousands."""
    counts: Counter[tuple[str, str]] = Counter()
    for name, checker in results.get("checkers", {}).items():
        if checker.get("valid") is False:
            for kind, n in (checker.get("anomaly_counts") or {}).items():
                counts[(name, kind)] = int(n)
    return sorted(counts, key=lambda k: (-counts[k], k))


def parse_kind(text: str) -> tuple[str, str]:
    """``checker:kind`` as a pair (a ValueError saying the form otherwise)."""
    checker, sep, kind = text.partition(":")
    if not sep or not checker or not kind:
        raise ShrinkError(f"--kind {text!r}: give it as CHECKER:KIND, e.g. unique_key:two-values")
    return checker, kind


def units(schedule: Sequence[Action], ends: dict[str, str]) -> list[list[int]]:
    """Indices of ``schedule`` grouped so that each interval's end (``ends``: end action ->
    the start it closes) stays with the latest still-open start of the same nemesis."""
    groups: list[list[int]] = []
    still_open: dict[tuple[str, str], list[int]] = {}  # (nemesis, start f) -> group indices
    for i, action in enumerate(schedule):
        start = ends.get(action.f)
        stack = still_open.get((action.nemesis, start)) if start else None
        if stack:
            groups[stack.pop()].append(i)
        else:
            groups.append([i])
            still_open.setdefault((action.nemesis, action.f), []).append(len(groups) - 1)
    return groups


def ddmin(items: list[T], fails: Callable[[list[T]], bool]) -> list[T]:
    """A 1-minimal sublist of ``items`` for which ``fails`` holds (``fails(items)`` is
    assumed): Zeller and Hildebrandt's delta debugging."""
    n = 2
    while len(items) >= 2:
        size = len(items) // n
        chunks = [items[k : k + size] for k in range(0, len(items), size)] if size else []
        for chunk in chunks:
            if fails(chunk):
                items, n = chunk, 2
                break
        else:
            for k, _ in enumerate(chunks):
                rest = [x for j, c in enumerate(chunks) if j != k for x in c]
                if fails(rest):
                    items, n = rest, max(n - 1, 2)
                    break
            else:
                if n >= len(items):
                    break
                n = min(len(items), n * 2)
    return items


def schedule_hash(schedule: Sequence[Action], duration_s: float) -> str:
    """A stable id of one candidate (what is run, not when)."""
    doc = json.dumps([[a.to_json() for a in schedule], duration_s], sort_keys=True)
    return hashlib.sha256(doc.encode()).hexdigest()[:16]


@dataclass
class Summary:
    """What a shrink found."""

    target: tuple[str, str]
    original: int
    minimal: list[Action]
    duration_s: float
    hits: int
    runs: int
    runs_used: int
    budget_left: bool
    replay_dir: Path

    def to_json(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "target": list(self.target),
            "original_actions": self.original,
            "minimal": [a.to_json() for a in self.minimal],
            "duration_s": self.duration_s,
            "reproduced": {"hits": self.hits, "runs": self.runs},
            "runs_used": self.runs_used,
            "finished": self.budget_left,
            "reproduce": f"sealcheck run --replay {self.replay_dir}",
        }


class Shrinker:
    """Shrinks one run; ``execute`` runs a candidate (a real run unless a test injects one)."""

    def __init__(
        self,
        run_dir: Path,
        execute: Execute,
        runs_per_candidate: int = 2,
        max_runs: int = 40,
        confirm: int = 3,
        kind: tuple[str, str] | None = None,
        log: Callable[[str], None] = print,
    ) -> None:
        self.run_dir, self.execute, self.log = run_dir, execute, log
        self.per, self.max_runs, self.confirm = runs_per_candidate, max_runs, confirm
        meta = _load(run_dir / "test.json")
        results = _load(run_dir / "results.json")
        if results.get("valid") is not False:
            raise ShrinkError(
                f"{run_dir} was judged {_verdict(results.get('valid'))}: only an INVALID run "
                "has an anomaly to keep; shrink a run whose verdict is INVALID"
            )
        kinds = anomaly_kinds(results)
        if kind is not None and kind not in kinds:
            known = ", ".join(f"{c}:{k}" for c, k in kinds)
            raise ShrinkError(f"--kind {kind[0]}:{kind[1]} is not in {run_dir}; it has {known}")
        if not kinds:
            raise ShrinkError(f"{run_dir} is INVALID but names no anomaly kind to keep")
        self.target = kind or kinds[0]
        try:
            self.cfg = build_config(meta["config"], stored=True)
            self.schedule = [Action.from_json(d) for d in meta["schedule"]]
        except Exception as exc:
            raise ShrinkError(f"{run_dir}/test.json cannot be replayed: {exc}") from None
        self.dir = run_dir / "shrink"
        self.dir.mkdir(exist_ok=True)
        self.outcomes = self.dir / "outcomes.jsonl"
        self.known: dict[str, list[dict[str, Any]]] = {}
        if self.outcomes.exists():
            for line in self.outcomes.read_text().splitlines():
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue  # a line cut by an interrupted shrink
                self.known.setdefault(rec["hash"], []).append(rec)
        self.runs_used = 0

    def validate(self) -> None:
        """Refuse a run whose saved parts no longer fit together here (a ConfigError naming
        the run): its test built and validated once, before any candidate runs."""
        from sealcheck.harness.run.test import build_test

        try:
            build_test(self.cfg, self.schedule).validate()
        except ConfigError as exc:
            raise ConfigError(f"{self.run_dir}/test.json cannot be replayed: {exc}") from None

    def _hit(self, rec: dict[str, Any]) -> bool:
        return list(self.target) in [list(k) for k in rec.get("kinds", [])]

    def _runs(
        self, schedule: list[Action], duration_s: float, want: int, stop_at_hit: bool
    ) -> list[dict[str, Any]]:
        key = schedule_hash(schedule, duration_s)
        recs = self.known.setdefault(key, [])
        while len(recs) < want and not (stop_at_hit and any(map(self._hit, recs))):
            if self.runs_used >= self.max_runs:
                break
            cfg = dataclasses.replace(
                self.cfg, duration_s=duration_s, runs_dir=str(self.dir / "runs")
            )
            self.runs_used += 1
            try:
                out = self.execute(cfg, schedule)
            except Exception as exc:  # a run that broke is not a reproduction
                out = {"valid": None, "kinds": [], "error": f"{type(exc).__name__}: {exc}"}
            rec = {"hash": key, "actions": len(schedule), "duration_s": duration_s, **out}
            with open(self.outcomes, "a") as f:
                f.write(json.dumps(rec, default=str) + "\n")
            recs.append(rec)
            self.log(
                f"shrink: run {self.runs_used}/{self.max_runs}: {len(schedule)} actions, "
                f"{duration_s:g}s -> {'reproduced' if self._hit(rec) else 'not reproduced'}"
            )
        return recs

    def reproduces(self, schedule: list[Action], duration_s: float) -> bool:
        """Whether any of up to ``runs_per_candidate`` runs shows the target anomaly."""
        return any(map(self._hit, self._runs(schedule, duration_s, self.per, True)))

    def shrink(self) -> Summary:
        """Delta-debug the units, then the duration, then confirm; write the results."""
        from sealcheck.nemeses.registry import marks
        from sealcheck.systems.roles import every_role

        ends = {f: m.opens for f, m in marks(every_role()).items() if m.kind == "end" and m.opens}
        groups = units(self.schedule, ends)
        duration = self.cfg.duration_s
        self.log(
            f"shrink: keeping {self.target[0]}:{self.target[1]}; {len(self.schedule)} actions "
            f"in {len(groups)} units; at most {self.max_runs} runs"
        )

        def pick(chosen: list[list[int]]) -> list[Action]:
            return [self.schedule[i] for i in sorted(i for g in chosen for i in g)]

        if not self.reproduces(self.schedule, duration):
            self.log("shrink: the full schedule did not reproduce in this budget; keeping it")
            best = groups
        else:
            best = ddmin(groups, lambda g: self.reproduces(pick(g), duration))
        minimal = pick(best)
        if minimal:
            shorter = round(
                min(duration, max(a.at_s for a in minimal) + self.cfg.nemesis_interval_s), 3
            )
            if shorter < duration and self.reproduces(minimal, shorter):
                duration = shorter
        recs = self._runs(minimal, duration, self.per + self.confirm, False)
        hits = sum(map(self._hit, recs))
        replay = self.dir / "minimal"
        replay.mkdir(exist_ok=True)
        cfg = dataclasses.replace(self.cfg, duration_s=duration)
        (replay / "test.json").write_text(
            json.dumps(
                {"config": cfg.to_json(), "schedule": [a.to_json() for a in minimal]}, indent=2
            )
        )
        summary = Summary(
            self.target,
            len(self.schedule),
            minimal,
            duration,
            hits,
            len(recs),
            self.runs_used,
            self.runs_used < self.max_runs,
            replay,
        )
        (self.dir / "summary.json").write_text(json.dumps(summary.to_json(), indent=2))
        return summary


def _verdict(valid: object) -> str:
    return "VALID" if valid is True else "INVALID" if valid is False else "UNKNOWN"


def _load(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        raise ShrinkError(
            f"{path} does not exist: give the directory of a finished run (e.g. runs/latest)"
        ) from None
    except (OSError, ValueError) as exc:
        raise ShrinkError(f"{path} cannot be read: {exc}") from None
    if not isinstance(doc, dict):
        raise ShrinkError(f"{path} is not a JSON object")
    return doc


def run_candidate(cfg: TestConfig, schedule: list[Action]) -> dict[str, Any]:
    """Run one candidate for real (the default :data:`Execute`)."""
    from sealcheck.harness.run.progress import Display
    from sealcheck.harness.run.runner import run_test
    from sealcheck.harness.run.test import build_test

    with Display(live=False) as display:
        outcome = run_test(build_test(cfg, schedule), display)
    results = json.loads((outcome.run_dir / "results.json").read_text())
    return {
        "valid": outcome.valid,
        "kinds": anomaly_kinds(results),
        "run_dir": str(outcome.run_dir),
    }


def add_command(sub: Any) -> None:
    """Register ``shrink`` on the CLI's subcommands."""
    p = sub.add_parser(
        "shrink", help="reduce an INVALID run's schedule to a smallest one with the same anomaly"
    )
    p.add_argument("run_dir", type=Path, help="the INVALID run (e.g. runs/latest)")
    p.add_argument("--kind", default=None, help="CHECKER:KIND to keep (default: the first)")
    p.add_argument(
        "--runs-per-candidate", type=positive, default=2, help="tries per candidate (default 2)"
    )
    p.add_argument("--max-runs", type=positive, default=40, help="run budget (default 40)")
    p.add_argument(
        "--confirm", type=int, default=3, help="extra runs of the minimal schedule (default 3)"
    )
    p.set_defaults(func=cmd_shrink)


def cmd_shrink(args: Any) -> int:
    """Shrink, print the minimal schedule and its reproduction rate."""
    import sys

    try:
        kind = parse_kind(args.kind) if args.kind else None
        shrinker = Shrinker(
            args.run_dir.resolve(),  # runs/latest moves with every run the shrink makes
            run_candidate,
            runs_per_candidate=args.runs_per_candidate,
            max_runs=args.max_runs,
            confirm=max(0, args.confirm),
            kind=kind,
        )
        shrinker.validate()
    except (ShrinkError, ConfigError) as exc:
        print(f"sealcheck shrink: {exc}", file=sys.stderr)
        return EXIT_BAD_ARGS
    s = shrinker.shrink()
    print(f"shrink: {s.original} actions -> {len(s.minimal)} in {s.runs_used} runs")
    for a in s.minimal:
        print(f"    {a.at_s:8.3f}s  {a.nemesis}: {a.f} {a.value or ''}")
    print(
        f"keeps {s.target[0]}:{s.target[1]} in {s.hits}/{s.runs} runs "
        f"(duration {s.duration_s:g}s){'' if s.budget_left else '; run budget exhausted'}"
    )
    print(f"reproduce: sealcheck run --replay {s.replay_dir}")
    return EXIT_VALID if s.hits else EXIT_INVALID
