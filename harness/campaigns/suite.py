"""``sealcheck suite FILE.toml``: run a matrix of chaos tests one at a time within a time
budget (nightly runs), and keep a summary that is rewritten after every case — JUnit XML,
JSON and an HTML index — so a suite that is killed still leaves a readable one.

Each case is a child ``sealcheck run`` (:mod:`sealcheck.harness.campaigns.child_run`) into
``<out>/runs/``. A case
that would start after the budget is spent is recorded as skipped. ``--repeat N`` runs each
case N times and reports how often it was INVALID (its reproduction rate); ``--rerun-failed
DIR`` runs only the cases that were not VALID in the suite stored in DIR. The exit code is the
worst verdict: 1 if a case was INVALID, else 2 if one was UNKNOWN or skipped, else 0.
"""

from __future__ import annotations

import json
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from sealcheck.harness.campaigns.child_run import ConfigError, config_for, run_chaos
from sealcheck.harness.campaigns.suite_spec import SuiteCase, SuiteError, SuiteSpec
from sealcheck.harness.campaigns.verdicts import ChaosResult
from sealcheck.rundir.archive import write_json
from sealcheck.rundir.names import RUNS_DIR

SUMMARY = "summary.json"


@dataclass
class CaseRun:
    """One run of one case (or its skip), as the summaries list it."""

    case: str
    repeat: int
    seed: int
    verdict: str
    failing: list[str]
    took_s: float
    report: str | None
    reproduce: str | None
    why: str = ""
    reason: str = ""  # why it is UNKNOWN, in one line (ChaosResult.reason)


def check_cases(spec: SuiteSpec) -> None:
    """Refuse the suite (SuiteError naming the case) if any case's settings would be refused
    by ``sealcheck run`` — before anything runs."""
    for case in spec.cases:
        try:
            config_for(Path(RUNS_DIR), case.run_name, case.seed, case.nemeses, _options(case))
        except ConfigError as exc:
            raise SuiteError(f"case {case.id}: {exc}") from None


def _options(case: SuiteCase) -> dict[str, Any]:
    """A case's settings for :mod:`sealcheck.harness.campaigns.child_run`."""
    return {"system": case.system, "backend": case.backend, **dict(case.settings)}


def failed_cases(previous: Path) -> set[str]:
    """The ids of the cases that were not VALID in the suite stored in ``previous``."""
    try:
        doc = json.loads((previous / SUMMARY).read_text())
    except (OSError, ValueError) as exc:
        raise SuiteError(
            f"--rerun-failed {previous}: no readable {SUMMARY} there ({exc}); give the output "
            "directory of an earlier `sealcheck suite`"
        ) from None
    return {r["case"] for r in doc.get("runs", []) if r.get("verdict") != "VALID"}


def exit_code(runs: Iterable[CaseRun]) -> int:
    """The worst verdict as an exit code: INVALID 1, UNKNOWN or skipped 2, all VALID 0."""
    verdicts = {r.verdict for r in runs}
    return 1 if "INVALID" in verdicts else 2 if verdicts - {"VALID"} else 0


def rates(runs: Iterable[CaseRun]) -> dict[str, dict[str, int]]:
    """Per case: how many runs, how many INVALID (its reproduction rate)."""
    out: dict[str, dict[str, int]] = {}
    for r in runs:
        n = out.setdefault(r.case, {"runs": 0, "invalid": 0})
        n["runs"] += r.verdict != "SKIPPED"
        n["invalid"] += r.verdict == "INVALID"
    return out


def write_summaries(out: Path, spec: SuiteSpec, runs: list[CaseRun], done: bool) -> None:
    """summary.json, junit.xml and index.html for the runs so far (each written to a
    temporary name and renamed, so a reader never sees half a file: ``write_json`` for the
    JSON)."""
    from sealcheck.report.suite_index import render_suite_index

    doc = {
        "suite": spec.name,
        "done": done,
        "cases": len(spec.cases),
        "runs": [asdict(r) for r in runs],
        "rates": rates(runs),
        "exit_code": exit_code(runs),
    }
    write_json(out / SUMMARY, doc)
    _replace(out / "junit.xml", _junit(spec, runs))
    _replace(out / "index.html", render_suite_index(doc, out))


def _replace(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)


def _junit(spec: SuiteSpec, runs: list[CaseRun]) -> str:
    suite = ET.Element("testsuite", name=spec.name, tests=str(len(runs)))
    suite.set("failures", str(sum(r.verdict == "INVALID" for r in runs)))
    suite.set("errors", str(sum(r.verdict == "UNKNOWN" for r in runs)))
    suite.set("skipped", str(sum(r.verdict == "SKIPPED" for r in runs)))
    for r in runs:
        name = r.case + (f"[{r.repeat}]" if r.repeat else "")
        tc = ET.SubElement(suite, "testcase", classname=spec.name, name=name, time=str(r.took_s))
        props = ET.SubElement(tc, "properties")
        for key, value in (("seed", r.seed), ("verdict", r.verdict), ("report", r.report)):
            ET.SubElement(props, "property", name=f"sealcheck_{key}", value=str(value))
        if r.reproduce:
            ET.SubElement(props, "property", name="sealcheck_reproduce", value=r.reproduce)
        tag = {"INVALID": "failure", "UNKNOWN": "error", "SKIPPED": "skipped"}.get(r.verdict)
        if tag is not None:
            ET.SubElement(tc, tag, message=r.why or r.verdict).text = r.why
    return ET.tostring(suite, encoding="unicode", xml_declaration=True)


def _case_run(case: SuiteCase, repeat: int, res: ChaosResult, took: float) -> CaseRun:
    why = res.summary() if res.verdict != "VALID" else ""
    return CaseRun(
        case.id,
        repeat,
        case.seed,
        res.verdict,
        list(res.failing_checkers),
        round(took, 1),
        str(res.report),
        res.reproduce[0] if res.reproduce else None,
        why,
        res.reason,
    )


def run_suite(
    spec: SuiteSpec,
    out: Path,
    budget_s: float,
    repeat: int = 1,
    only: set[str] | None = None,
    case_timeout_s: float = 1800.0,
    say: Callable[[str], None] = print,
) -> list[CaseRun]:
    """Run the cases (those in ``only``, if given) one at a time, ``repeat`` times each, while
    the budget lasts; rewrite the summaries after each; return every run."""
    out.mkdir(parents=True, exist_ok=True)
    chosen = [c for c in spec.cases if only is None or c.id in only]
    runs: list[CaseRun] = []
    start = time.monotonic()
    write_summaries(out, spec, runs, done=False)
    for case in chosen:
        for n in range(repeat):
            left = budget_s - (time.monotonic() - start)
            if left <= 0:
                why = f"the budget of {budget_s:.0f}s was spent before it could start"
                runs.append(CaseRun(case.id, n, case.seed, "SKIPPED", [], 0.0, None, None, why))
                say(f"{case.id}: skipped ({why})")
                continue
            began = time.monotonic()
            name = case.run_name + (f"-r{n}" if repeat > 1 else "")
            res = run_chaos(
                out / "runs", name, case.seed, case.nemeses, _options(case), case_timeout_s
            )
            runs.append(_case_run(case, n, res, time.monotonic() - began))
            say(f"{case.id}{f' [{n}]' if repeat > 1 else ''}: {res.verdict} "
                f"({time.monotonic() - began:.0f}s) {res.report}")  # fmt: skip
            write_summaries(out, spec, runs, done=False)
    write_summaries(out, spec, runs, done=True)
    return runs


def add_command(sub: Any) -> None:
    """``sealcheck suite``."""
    p = sub.add_parser(
        "suite",
        help="run a matrix of chaos tests within a time budget (nightly); JUnit XML, JSON, HTML",
        description="Run the cases of a suite file one at a time; exit 0 all valid, 1 a case "
        "invalid, 2 a case unknown or skipped, 254 bad arguments.",
    )
    p.add_argument("file", type=Path, help="the suite, a TOML file (see examples/nightly.toml)")
    p.add_argument("--out", type=Path, default=None, help="default runs/suites/<name>/<time>")
    p.add_argument("--budget", type=float, default=None, help="seconds (default the file's)")
    p.add_argument("--repeat", type=int, default=1, help="run each case N times (default 1)")
    p.add_argument("--rerun-failed", type=Path, default=None, metavar="DIR")
    p.add_argument("--case-timeout", type=float, default=1800.0, help="seconds per run")
    p.add_argument("--list", action="store_true", help="print the cases and exit")
    p.set_defaults(func=cmd_suite)


def cmd_suite(args: Any) -> int:
    """Run a suite from the command line."""
    import sys

    from sealcheck.harness.campaigns.suite_spec import load_suite

    try:
        spec = load_suite(args.file)
        only = failed_cases(args.rerun_failed) if args.rerun_failed else None
        if args.repeat < 1:
            raise SuiteError(f"--repeat {args.repeat}: run each case at least once (1 or more)")
        budget = args.budget if args.budget is not None else spec.budget_s
        if budget is None or budget <= 0:
            raise SuiteError(f"{args.file} has no budget_s; give --budget SECONDS (e.g. 3600)")
        check_cases(spec)
    except SuiteError as exc:
        print(f"sealcheck suite: {exc}", file=sys.stderr)
        return 254
    if args.list:
        for case in spec.cases:
            print(case.id)
        return 0
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    out = args.out or Path(RUNS_DIR) / "suites" / spec.name / stamp
    print(f"suite {spec.name}: {len(spec.cases)} cases, budget {budget:.0f}s, output {out}")
    runs = run_suite(spec, out, budget, args.repeat, only, args.case_timeout)
    code = exit_code(runs)
    print(f"suite {spec.name}: exit {code}; summary {out / 'index.html'}")
    return code
