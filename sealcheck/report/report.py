"""``report.html``: one self-contained page per run (inline CSS and SVG, no scripts, no
network), verdict first, rendered from ``templates/report.html.j2`` with autoescaping.

Sections: the verdict and what it covers (:mod:`sealcheck.report.headline`: composed from what
was judged); what this run judged; why; how to reproduce; the timeline on one time base
(0 s = the run's start, the schedule's zero marked) with a legend: fault lanes, down-time,
anomalies at their step, writes per second and each collection's upper; the anomalies with
their context in words; the failing keys' story; checkers; inputs; the step assignment and the
seal lag (for an output without bindings, one line each saying why there is none); the fault
schedule as planned versus what happened; the incarnations and their logs; the states of an
output without bindings with the batches each follows; micro-batches (Delta); window coverage;
every file and log; config; versions.

It renders and computes nothing: the verdict, the anomalies and the run's facts (step
assignment, seal lag, the keys' story: :mod:`sealcheck.rundir.facts`) come from
``results.json``, the timeline from the history; it imports no checker (an import-linter
contract). A run judged before its facts were recorded still renders, saying so.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from markupsafe import Markup

from sealcheck.report import chart
from sealcheck.report.batches import batch_rows, state_rows, tables_of
from sealcheck.report.explain import context_lines, schedule_rows
from sealcheck.report.halted import halted, how_it_ended
from sealcheck.report.headline import (
    MEANING,
    judged_lines,
    meaning,
    steps_judged,
)
from sealcheck.report.job_versions import version_rows
from sealcheck.report.story import stories
from sealcheck.report.templating import render as render_template
from sealcheck.report.timeline import build_timeline
from sealcheck.rundir.archive import REJUDGING
from sealcheck.rundir.coverage import COVERAGE, Window, from_json
from sealcheck.rundir.facts import RunFacts, SealLag, StepAssignment, bindings_kept, read_facts
from sealcheck.rundir.history import History, HistoryError
from sealcheck.rundir.judged import (
    NOT_APPLICABLE,
    VERDICT_WORDS,
    is_not_applicable,
    report_meta,
    step_order,
)
from sealcheck.rundir.marks import MARKS, Mark, stored_marks
from sealcheck.rundir.names import SUT_EXIT, log_of
from sealcheck.rundir.regular import read_text

__all__ = ["COLORS", "MEANING", "WORDS", "render", "steps_judged", "write_report"]

COLORS = {True: "#1a7f37", False: "#cf222e", "unknown": "#9a6700", None: "#9a6700"}
#: results.json's ``valid`` -> the word shown (it spells unknown ``"unknown"``)
WORDS: dict[bool | str | None, str] = {**dict(VERDICT_WORDS.items()), "unknown": "UNKNOWN"}
#: the banner of a run whose verdict is being re-judged (``sealcheck check`` under way, or dead)
REJUDGING_MEANING = (
    "No verdict: `sealcheck check` started re-judging this run and has not finished; the older "
    "verdict was withdrawn. If this stays, the check died: run it again."
)
SERIES = {
    "bindings": "#8250df",
    "data": "#0969da",
    "errors": "#bc4c00",
    "writes/s": "#1a7f37",
    "slowest lag": "#9a6700",
}
#: the legend of an anomaly at a state of an output without bindings (not a sealed step)
STATE_ANOMALY = (chart.STYLE["anomaly"][0], "anomaly (where its state was first seen)", "down")
#: the facts of a run being re-judged (its ``results.json`` is only a marker)
REJUDGING_FACTS = "not available while the run is being re-judged"


def _facts(results: dict[str, Any]) -> RunFacts:
    """The run's facts as the checkers recorded them (each saying why when they did not)."""
    return RunFacts.missing(REJUDGING_FACTS) if results.get(REJUDGING) else read_facts(results)


def lag_row(lag: SealLag | None) -> list[Any] | None:
    """p50, p99, max and how many writes, as the seal lag table shows them (None: nothing
    to show)."""
    if lag is None or not lag.count:
        return None
    return [f"{lag.p50_s:.2f} s", f"{lag.p99_s:.2f} s", f"{lag.max_s:.2f} s", lag.count]


def steps_rows(steps: StepAssignment | None) -> list[tuple[str, str]]:
    """The step assignment in words (empty: nothing to show)."""
    if steps is None:
        return []
    span = "none" if steps.first is None else f"{steps.first} to {steps.last}"
    return [
        ("input records bound to a sealed step", f"{steps.bound:,} of {steps.records:,}"),
        ("not bound (not sealed by the end)", f"{steps.unbound:,}"),
        ("sealed steps that bound records", f"{steps.steps:,} (steps {span})"),
        ("most records one step bound", f"{steps.most:,}"),
        ("acknowledged writes bound", f"{steps.acked_bound:,} of {steps.acked:,}"),
    ]


def _text(value: Any) -> str:
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True, default=str)
    return "" if value is None else str(value)


def _files(run_dir: Path) -> list[dict[str, str]]:
    out = []
    for path in sorted([*run_dir.glob("*.json*"), *run_dir.glob("logs/*")]):
        if path.is_file():
            size = path.stat().st_size
            out.append({"href": str(path.relative_to(run_dir)), "size": f"{size / 1024:.1f} KiB"})
    return out


def _anomalies(results: dict[str, Any], states: bool = False) -> list[dict[str, Any]]:
    """Every example anomaly, the first wrong step first (then by checker; those without a
    step last), its step named as the system names it (``context["batch"]``, which the checkers
    set: said once, beside the step); ``states``: its steps are states of an output without
    bindings."""
    rows = []
    for name, c in results.get("checkers", {}).items():
        for a in c.get("anomalies", []):
            step = a.get("step")
            context = dict(a.get("context") or {})
            label = context.pop("batch", None) if step is not None else None
            rows.append(
                {
                    **a,
                    "checker": name,
                    "step": f"{step} ({label})" if label is not None else _text(step),
                    "raw_step": step,
                    "expected": _text(a.get("expected")),
                    "found": _text(a.get("found")),
                    "lines": context_lines(context, states),
                }
            )
    return sorted(rows, key=lambda r: step_order(r["raw_step"], r["checker"]))


def _word(checker: dict[str, Any]) -> str:
    """A checker's verdict as the report shows it."""
    return (
        "NOT APPLICABLE"
        if is_not_applicable(checker)
        else WORDS.get(checker.get("valid"), "UNKNOWN")
    )


def render(run_dir: Path, marks: Mapping[str, Mark] | None = None) -> str:
    """The report of a stored run as one HTML string, from its directory alone: its faults
    drawn as ``test.json``'s marks say (``marks``: for a run stored before they were kept)."""
    meta = _load(run_dir / "test.json")
    results = _load(run_dir / "results.json")
    try:
        history = History.load(run_dir / "history.jsonl")
        unreadable = ""
    except HistoryError as exc:  # the same reader and the same message as the checkers
        history, unreadable = History.empty(str(exc)), str(exc)
    ops = history.ops
    facts = _facts(results)
    try:
        tl = build_timeline(history, stored_marks(meta.get(MARKS)) or marks)
    except HistoryError as exc:
        tl, unreadable = build_timeline(History.empty()), str(exc)
    valid = results.get("valid")
    cfg = meta.get("config", {})
    inputs = results.get("inputs") or {}
    acks = inputs.get("acknowledged_writes") or {}
    kept = bindings_kept(results, facts)  # our pipeline's steps, or states seen from outside
    anomalies = _anomalies(results, not kept)
    drawn = [{**a, "step": a["raw_step"], "of_state": not kept} for a in anomalies]
    lanes, legend = chart.lanes(tl, drawn)
    charts = [
        chart.series(
            tl,
            "acknowledged writes per second",
            "writes/s",
            {"writes/s": list(tl.rate)},
            SERIES,
            step=False,
        ),
        chart.series(
            tl,
            "upper (sealed steps) per collection"
            if kept
            else "states taken per collection (the upper: how many so far)",
            "step" if kept else "states",
            tl.uppers,
            SERIES,
            step=True,
            anomalies=[a for a in drawn if a.get("collection") in ("data", None)],
        ),
    ]
    lag = facts.seal_lag
    if lag is not None and lag.series:
        title = f"seal lag: the slowest write acknowledged in each {lag.bucket_s:g} s"
        lagging = {"slowest lag": lag.series}
        charts.append(chart.series(tl, title, "seconds", lagging, SERIES, step=False))
    told, story_why = stories(facts, drawn, kept)
    exits = [o for o in ops if o.get("f") == SUT_EXIT]
    ran = history.versions()  # incarnation -> its version (a system that declares versions)
    batches = batch_rows(run_dir, ops)
    states = state_rows(run_dir) if not kept else None
    return render_template(
        "report.html.j2",
        name=cfg.get("name", "run"),
        seed=cfg.get("seed"),
        system=cfg.get("system", "upsert-source"),
        word=WORDS[valid],
        verdict_meta=Markup(report_meta(WORDS[valid])),  # what serve reads back
        color=COLORS[valid],
        meaning=REJUDGING_MEANING if results.get(REJUDGING) else meaning(results, facts),
        step_word="step" if kept else "state",
        run_dir=str(run_dir),
        started=meta.get("started"),
        took=meta.get("took_s"),
        final_phase=meta.get("final_phase"),
        halted=halted(ops),
        bad=[
            n
            for n, c in results.get("checkers", {}).items()
            if c.get("valid") is not True and not is_not_applicable(c)
        ],
        not_applicable=[n for n, c in results.get("checkers", {}).items() if is_not_applicable(c)],
        not_applicable_word=NOT_APPLICABLE,
        judged=judged_lines(results, facts),
        problems=[*inputs.get("problems", []), *([unreadable] if unreadable else [])],
        reproduce=meta.get("reproduce", []),
        faults_start=tl.faults_start_s,
        legend=legend,
        style=chart.STYLE if kept else {**chart.STYLE, "anomaly": STATE_ANOMALY},
        symbol=chart.symbol,
        lanes=lanes,
        charts=charts,
        anomalies=anomalies,
        anomalies_more=_more(results),
        stories=told,
        story_why=story_why,
        checkers=[
            {
                "name": n,
                "word": _word(c),
                "anomalies": _text(c.get("anomaly_counts") or "-"),
                "counts": _text(c.get("counts")),
                "error": c.get("error") or "",
                "took": c.get("took_s", 0),
            }
            for n, c in results.get("checkers", {}).items()
        ],
        inputs=[
            ("complete", "yes" if inputs.get("complete") else "no"),
            ("acknowledged writes read / counted", f"{acks.get('read')} / {acks.get('written')}"),
            *[("note", n) for n in inputs.get("notes", [])],
        ],
        lag=lag_row(lag),
        kept=kept,
        lag_why=facts.lag_why or "no sealed acknowledged writes to measure",
        steps_assigned=steps_rows(facts.steps),
        steps_why=facts.steps_why,
        schedule=schedule_rows(meta.get("schedule", []), ops, tl.faults_start_s),
        exits=[_exit(run_dir, o, ran) for o in exits],
        job_versions=version_rows(history),
        fired=", ".join(
            sorted(
                {str(o["value"]["failpoint"]) for o in exits if o.get("value", {}).get("failpoint")}
            )
        ),
        batches=None
        if batches is None
        else {
            "rows": batches[0],
            "counts": batches[1],
            "header": [
                "batch",
                "planned",
                "committed",
                *[f"{t} versions" for t in tables_of(run_dir)],
                "started by incarnation",
                "note",
            ],
        },
        states=None
        if states is None
        else {"record": states[0], "rows": states[1], "more": states[2]},
        states_why=facts.states_why,
        windows=_coverage(results),
        files=_files(run_dir),
        config=[(k, _text(v)) for k, v in sorted(cfg.items())],
        versions=sorted(meta.get("versions", {}).items()),
    )


def _more(results: dict[str, Any]) -> str:
    shown = sum(len(c.get("anomalies", [])) for c in results.get("checkers", {}).values())
    total = sum(
        sum((c.get("anomaly_counts") or {}).values()) for c in results.get("checkers", {}).values()
    )
    return (
        f"{shown} examples shown of {total} anomalies (the counts are complete)"
        if total > shown
        else ""
    )


def _exit(run_dir: Path, op: dict[str, Any], ran: Mapping[int, str]) -> dict[str, Any]:
    """An exit's row (``ran``: the version each incarnation ran, for a system with versions)."""
    v = op.get("value") or {}
    n = v.get("incarnation")
    return {
        "version": ran.get(n) if type(n) is int else None,
        "incarnation": v.get("incarnation"),
        "pid": v.get("pid"),
        "at": f"{int(op.get('time', 0)) / 1e9:.1f} s",
        "code": v.get("code"),
        "failpoint": v.get("failpoint") or "",
        "how": how_it_ended(v),
        "log": log_of(run_dir, v.get("incarnation")),
    }


def _coverage(results: dict[str, Any]) -> list[Window]:
    """The coverage the judge wrote into ``results.json`` (none for a run judged before it
    was written there: ``sealcheck check`` judges it again)."""
    return from_json(results.get(COVERAGE)) or []


def _load(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(read_text(path, path.parent))  # a FIFO is not opened: never ends
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def write_report(run_dir: Path, marks: Mapping[str, Mark] | None = None) -> Path:
    """Write ``report.html`` into the run directory (``marks``: as :func:`render`); return its
    path."""
    path = run_dir / "report.html"
    path.write_text(render(run_dir, marks), encoding="utf-8")
    return path
