"""``report.html``: one self-contained page per run (inline CSS and SVG, no scripts, no
network), verdict first.

Sections: verdict and why; how to reproduce; config and seed; per-checker results; seal lag;
the timeline (acknowledged writes per second and each collection's upper over time, fault
intervals shaded, instant faults and pipeline restarts marked); the anomaly table; the
pipeline's exits (with the failpoint that fired); the fault schedule.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import polars as pl

from report.batches import batch_rows, step_labels, tables_of
from report.coverage import coverage, outcomes
from report.timeline import Timeline, build_timeline
from rundir.history import History, HistoryError

COLORS = {True: "#1a7f37", False: "#cf222e", "unknown": "#9a6700", None: "#9a6700"}
WORDS = {True: "VALID", False: "INVALID", "unknown": "UNKNOWN", None: "UNKNOWN"}
SERIES = {"bindings": "#8250df", "data": "#0969da", "errors": "#bc4c00"}
CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#1f2328;max-width:1200px}
h1{margin:0 0 4px} h2{margin:28px 0 8px;border-bottom:1px solid #d0d7de}
.verdict{color:#fff;padding:14px 20px;border-radius:6px;font-size:28px;font-weight:700}
table{border-collapse:collapse;margin:6px 0} td,th{border:1px solid #d0d7de;padding:3px 8px;
text-align:left;vertical-align:top} th{background:#f6f8fa} code,pre{background:#f6f8fa;
padding:2px 4px;border-radius:4px} pre{padding:8px;white-space:pre-wrap}
.small{color:#59636e;font-size:12px}
"""


def _e(value: Any) -> str:
    if isinstance(value, dict | list):
        value = json.dumps(value, sort_keys=True, default=str)
    return html.escape(str(value))


def _table(header: list[str], rows: list[list[Any]]) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _chart(tl: Timeline, title: str, series: dict[str, list[tuple[float, int]]], step: bool) -> str:
    w, h, left, top, bottom = 1100, 220, 60, 24, 30
    span = max(tl.end_s, 1.0)
    top_y = max((v for pts in series.values() for _, v in pts), default=1) or 1

    def x(t: float) -> float:
        return left + (w - left - 10) * t / span

    def y(v: float) -> float:
        return top + (h - top - bottom) * (1 - v / top_y)

    parts = [f'<svg width="{w}" height="{h}" xmlns="http://www.w3.org/2000/svg">']
    parts.append(f'<rect x="0" y="0" width="{w}" height="{h}" fill="#ffffff"/>')
    for a, b, label in tl.intervals:
        parts.append(
            f'<rect x="{x(a):.1f}" y="{top}" width="{max(x(b) - x(a), 1):.1f}" '
            f'height="{h - top - bottom}" fill="#ffd8b5" opacity="0.6"><title>{_e(label)}'
            "</title></rect>"
        )
    for t, label in tl.instants:
        parts.append(
            f'<line x1="{x(t):.1f}" x2="{x(t):.1f}" y1="{top}" y2="{h - bottom}" '
            f'stroke="#cf222e" stroke-width="1.5"><title>{_e(label)}</title></line>'
        )
    for t, label in tl.restarts:
        parts.append(
            f'<circle cx="{x(t):.1f}" cy="{h - bottom + 6}" r="3.5" fill="#8250df">'
            f"<title>restart: {_e(label)}</title></circle>"
        )
    for name, pts in series.items():
        if not pts:
            continue
        coords: list[str] = []
        prev = None
        for t, v in pts:
            if step and prev is not None:
                coords.append(f"{x(t):.1f},{y(prev):.1f}")
            coords.append(f"{x(t):.1f},{y(v):.1f}")
            prev = v
        color = SERIES.get(name, "#1f2328")
        parts.append(
            f'<polyline fill="none" stroke="{color}" stroke-width="1.8" '
            f'points="{" ".join(coords)}"><title>{_e(name)}</title></polyline>'
        )
    parts.append(
        f'<line x1="{left}" x2="{w - 10}" y1="{h - bottom}" y2="{h - bottom}" stroke="#59636e"/>'
    )
    for i in range(6):
        t = span * i / 5
        parts.append(
            f'<text x="{x(t):.1f}" y="{h - 4}" font-size="11" text-anchor="middle">{t:.0f}s</text>'
        )
    parts.append(f'<text x="4" y="{top + 4}" font-size="11">{top_y}</text>')
    parts.append(f'<text x="{left}" y="14" font-size="12" font-weight="600">{_e(title)}</text>')
    legend = " ".join(f'<tspan fill="{SERIES.get(n, "#1f2328")}">■ {_e(n)}</tspan>' for n in series)
    parts.append(f'<text x="{w - 360}" y="14" font-size="12">{legend}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _ranges(run_dir: Path) -> pl.DataFrame | None:
    try:
        from checkers import load_run
        from checkers.replay import binding_ranges

        run = load_run(run_dir)
        return binding_ranges(run.collection("bindings"), run.uppers.get("bindings", 0))
    except Exception:
        return None


def render(run_dir: Path) -> str:
    """The report of a stored run as one HTML string."""
    meta = _load(run_dir / "test.json")
    results = _load(run_dir / "results.json")
    try:
        history = History.load(run_dir / "history.jsonl")
        unreadable = ""
    except HistoryError as exc:  # the same reader and the same message as the checkers
        history, unreadable = History.empty(str(exc)), str(exc)
    ops = history.ops
    try:
        tl = build_timeline(history, _ranges(run_dir))
    except HistoryError as exc:
        tl, unreadable = build_timeline(History.empty(), None), str(exc)
    valid = results.get("valid")
    cfg = meta.get("config", {})
    out = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>sealcheck "
        f"{_e(cfg.get('name', ''))}: {WORDS[valid]}</title><style>{CSS}</style></head><body>"
    ]
    out.append(
        f'<div class="verdict" id="verdict" style="background:{COLORS[valid]}">{WORDS[valid]}</div>'
    )
    out.append(f"<h1>{_e(cfg.get('name', 'run'))} — seed {_e(cfg.get('seed'))}</h1>")
    out.append(
        f"<p class='small'>{_e(run_dir)} · started {_e(meta.get('started'))} · took "
        f"{_e(meta.get('took_s'))} s · final phase: {_e(meta.get('final_phase'))}</p>"
    )
    bad = [n for n, c in results.get("checkers", {}).items() if c.get("valid") is not True]
    if bad:
        out.append(
            f"<p>Not valid: <b>{_e(', '.join(bad))}</b>. The anomalies below say which "
            "key, step and values, and what the nemesis did just before.</p>"
        )
    inputs = results.get("inputs") or {}
    problems = [*inputs.get("problems", []), *([unreadable] if unreadable else [])]
    if problems:
        out.append(
            "<p><b>The inputs are incomplete, so this run cannot be valid:</b></p><ul>"
            + "".join(f"<li>{_e(p)}</li>" for p in problems)
            + "</ul>"
        )
    out.append("<h2>Reproduce</h2><pre>" + _e("\n".join(meta.get("reproduce", []))) + "</pre>")
    out.append("<h2>Checkers</h2>")
    out.append(
        _table(
            ["checker", "verdict", "anomalies", "counts", "error", "took"],
            [
                [
                    n,
                    WORDS[c.get("valid")],
                    c.get("anomaly_counts") or "-",
                    c.get("counts"),
                    c.get("error") or "",
                    f"{c.get('took_s', 0)} s",
                ]
                for n, c in results.get("checkers", {}).items()
            ],
        )
    )
    acks = inputs.get("acknowledged_writes") or {}
    out.append(
        "<h2>Inputs</h2>"
        + _table(
            ["judged", "value"],
            [
                ["complete", "yes" if inputs.get("complete") else "no"],
                [
                    "acknowledged writes read / counted",
                    f"{acks.get('read')} / {acks.get('written')}",
                ],
                *[["note", n] for n in inputs.get("notes", [])],
            ],
        )
    )
    lag = tl.lag_s
    out.append("<h2>Seal lag</h2>")
    out.append(
        _table(
            ["p50", "p99", "max", "writes sealed"],
            [
                [
                    f"{lag['p50']:.2f} s",
                    f"{lag['p99']:.2f} s",
                    f"{lag['max']:.2f} s",
                    int(lag["count"]),
                ]
            ],
        )
        if lag.get("count")
        else "<p>no sealed acknowledged writes to measure</p>"
    )
    out.append(
        "<p class='small'>From a write's acknowledgement to the first observation of "
        "<code>data</code> sealed past the step that bound it (sampled every 0.25 s).</p>"
    )
    out.append(
        "<h2>Timeline</h2><p class='small'>Shaded: pauses and broker outages. Red "
        "lines: kills and armed failpoints. Purple dots: pipeline (re)starts.</p>"
    )
    out.append(
        _chart(
            tl,
            "acknowledged writes per second",
            {"writes/s": [(t, v) for t, v in tl.rate]},
            step=False,
        )
    )
    out.append(_chart(tl, "upper (sealed steps) per collection", tl.uppers, step=True))
    out.append("<h2>Anomalies</h2>")
    labels = step_labels(run_dir)
    rows = [
        [
            n,
            a.get("kind"),
            a.get("collection"),
            a.get("key"),
            f"{a.get('step')} ({labels[a['step']]})" if a.get("step") in labels else a.get("step"),
            a.get("expected"),
            a.get("found"),
            a.get("detail"),
            a.get("context"),
        ]
        for n, c in results.get("checkers", {}).items()
        for a in c.get("anomalies", [])
    ]
    out.append(
        _table(
            [
                "checker",
                "kind",
                "collection",
                "key",
                "step",
                "expected",
                "found",
                "detail",
                "context",
            ],
            rows,
        )
        if rows
        else "<p>none</p>"
    )
    exits = [o.get("value", {}) for o in ops if o.get("f") == "pipeline-exit"]
    fired = sorted({str(v.get("failpoint")) for v in exits if v.get("failpoint")})
    out.append(
        f"<h2>Pipeline incarnations</h2><p>{len(exits)} exits; failpoints that fired: "
        f"{_e(', '.join(fired) or 'none')}</p>"
    )
    out.append(
        _table(
            ["incarnation", "pid", "exit code", "failpoint"],
            [
                [v.get("incarnation"), v.get("pid"), v.get("code"), v.get("failpoint")]
                for v in exits
            ],
        )
    )
    batches = batch_rows(run_dir)
    if batches is not None:
        rows, n = batches
        out.append(
            "<h2>Micro-batches and table versions</h2><p>"
            f"{n['batches']} batches; {n['ran_more_than_once']} ran in more than one incarnation "
            f"(replayed after a crash); {n['committed_twice']} were committed twice by a table. "
            "Planned: Spark wrote <code>offsets/N</code>; committed: <code>commits/N</code>; the "
            "versions of each table are mapped to batches by Delta's transaction identifiers.</p>"
            + _table(
                [
                    "batch",
                    "planned",
                    "committed",
                    *[f"{t} versions" for t in tables_of(run_dir)],
                    "started by incarnation",
                    "note",
                ],
                rows,
            )
        )
    out.append(
        "<h2>Config</h2>" + _table(["setting", "value"], [[k, v] for k, v in sorted(cfg.items())])
    )
    windows = coverage(meta, ops)
    out.append(
        "<h2>Window coverage</h2><p>Each failure window of the system under test (its "
        "failpoints) and each kind of fault: how often it was planned, reached (an incarnation "
        "died there / the fault happened) and missed.</p>"
        + _table(
            ["window or fault", "where", "planned", "reached", "missed"],
            [[w.name, w.where, w.planned, w.hit, w.missed] for w in windows],
        )
    )
    out.append("<h2>Fault schedule (planned from the seed) and what happened</h2>")
    settled = outcomes(ops)
    out.append(
        _table(
            ["#", "at", "nemesis", "f", "value", "outcome", "why / what"],
            [
                [
                    i,
                    f"{a['at_s']:.2f} s",
                    a["nemesis"],
                    a["f"],
                    a["value"],
                    settled.get(i, {}).get("outcome", "not run"),
                    settled.get(i, {}).get("why")
                    or {
                        k: v
                        for k, v in settled.get(i, {}).items()
                        if k not in ("outcome", "action", "f", *a["value"])
                    },
                ]
                for i, a in enumerate(meta.get("schedule", []))
            ],
        )
    )
    out.append(
        "<h2>Versions</h2>"
        + _table(["component", "version"], sorted(meta.get("versions", {}).items()))
    )
    out.append("</body></html>")
    return "\n".join(out)


def _load(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def write_report(run_dir: Path) -> Path:
    """Write ``report.html`` into the run directory; return its path."""
    path = run_dir / "report.html"
    path.write_text(render(run_dir), encoding="utf-8")
    return path
