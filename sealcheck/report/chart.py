"""The report's charts as geometry: numbers and labels only, drawn as SVG by the
``report.html.j2`` template (so every label is escaped there, like any other value).

Two kinds of chart on the one time base of :mod:`sealcheck.report.timeline`:

* :func:`lanes` — one lane per kind of fault (the legend's groups), the system under test's
  down-time and starts, and the anomalies at the moment their step was sealed;
* :func:`series` — a line chart (writes per second, each collection's upper, the seal lag's
  slowest write per stretch of time) with the down-time shaded, kills and fired failpoints as
  thin lines and anomalies marked.

Why hand-written and not a plotting library: the page must be one self-contained file that
opens offline years later, with hover titles and links from a marker to its anomaly row;
matplotlib would give a picture without either and 50 MB more to install, and the JavaScript
libraries need a script or a CDN. Axes here are real: "nice" ticks (1, 2 or 5 times a power
of ten) and a grid on both axes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sealcheck.report.timeline import Marker, Timeline

#: legend group -> (colour, legend text, shape); shapes: bar, x, diamond, hollow, up, down, dot
STYLE: dict[str, tuple[str, str, str]] = {
    "down": ("#8c959f", "system under test down (exit → next start)", "bar"),
    "start": ("#8250df", "incarnation started", "dot"),
    "kill": ("#cf222e", "kill -9", "x"),
    "failpoint": ("#a40e26", "failpoint fired (its incarnation crashed there)", "diamond"),
    "failpoint-idle": ("#6e7781", "failpoint armed, never fired", "hollow"),
    "pause": ("#d4a72c", "pause (process frozen)", "bar"),
    "partition": ("#0969da", "network partition", "bar"),
    "outage": ("#fa4549", "broker / database down", "bar"),
    "zombie": ("#6639ba", "zombie writer stalled", "bar"),
    "storage": ("#bc4c00", "storage fault (lost commit reply, lost un-fsynced writes)", "up"),
    "upgrade": (
        "#1a7f37",
        "upgrade or rollback (a version stopped, another started; labelled with it)",
        "up",
    ),
    "anomaly": ("#bf3989", "anomaly (where its step was sealed)", "down"),
    "faults-start": ("#1f2328", "schedule zero: faults start (dashed)", "line"),
}
#: lane title -> the groups drawn in it, top to bottom
LANES = {
    "system under test": ("down", "start"),
    "kills, failpoints": ("kill", "failpoint", "failpoint-idle"),
    "pauses": ("pause",),
    "partitions": ("partition",),
    "brokers / database": ("outage",),
    "zombie writers": ("zombie",),
    "storage faults": ("storage",),
    "upgrades, rollbacks": ("upgrade",),
    "anomalies": ("anomaly",),
}
ALWAYS = ("system under test", "anomalies")
WIDTH, LEFT, RIGHT = 1100, 150, 16


@dataclass
class Chart:
    """An SVG chart as plain geometry for the template."""

    title: str
    height: int
    x_label: str
    y_label: str = ""
    rects: list[dict[str, Any]] = field(default_factory=list)
    lines: list[dict[str, Any]] = field(default_factory=list)
    paths: list[dict[str, Any]] = field(default_factory=list)
    texts: list[dict[str, Any]] = field(default_factory=list)
    width: int = WIDTH


def nice_ticks(top: float, target: int = 8) -> list[float]:
    """Ticks from 0 to at least ``top``, about ``target`` of them, on a step of 1, 2 or 5
    times a power of ten."""
    top = max(float(top), 1e-9)
    raw = top / max(target, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    n = math.ceil(top / step - 1e-9)
    return [round(i * step, 10) for i in range(n + 1)]


def _label(v: float) -> str:
    return f"{v:g}" if abs(v) < 1e6 else f"{v:.2e}"


def symbol(shape: str, x: float, y: float, r: float = 5.0) -> str:
    """An SVG path ``d`` for a marker shape centred on (x, y)."""
    if shape == "x":
        a, b, c, d = x - r, y - r, x + r, y + r
        return f"M{a:.1f},{b:.1f}L{c:.1f},{d:.1f}M{a:.1f},{d:.1f}L{c:.1f},{b:.1f}"
    if shape in ("diamond", "hollow"):
        return f"M{x:.1f},{y - r:.1f}L{x + r:.1f},{y:.1f}L{x:.1f},{y + r:.1f}L{x - r:.1f},{y:.1f}Z"
    if shape == "up":
        return f"M{x:.1f},{y - r:.1f}L{x + r:.1f},{y + r:.1f}L{x - r:.1f},{y + r:.1f}Z"
    if shape == "down":
        return f"M{x - r:.1f},{y - r:.1f}L{x + r:.1f},{y - r:.1f}L{x:.1f},{y + r:.1f}Z"
    arc = f"a{r:.1f},{r:.1f} 0 1,0"
    return f"M{x - r:.1f},{y:.1f}{arc} {2 * r:.1f},0{arc} {-2 * r:.1f},0"


def _mark(
    chart: Chart, group: str, x: float, y: float, title: str, href: str | None = None
) -> None:
    color, _, shape = STYLE[group]
    filled = shape not in ("x", "hollow")
    chart.paths.append(
        {
            "d": symbol(shape, x, y, 6.0 if group == "anomaly" else 5.0),
            "fill": color if filled else "#ffffff" if shape == "hollow" else "none",
            "stroke": color,
            "width": 2.2 if shape == "x" else 1.4,
            "title": title,
            "href": href,
            "cls": f"mark mark-{group}",
        }
    )


def _x_axis(
    chart: Chart, span: float, top: float, bottom: float, faults_start: float | None
) -> None:
    scale = (chart.width - LEFT - RIGHT) / span
    for t in nice_ticks(span, 12):
        if t > span + 1e-9:
            continue
        x = LEFT + t * scale
        chart.lines.append({"x1": x, "y1": top, "x2": x, "y2": bottom, "stroke": "#eaeef2"})
        chart.texts.append({"x": x, "y": bottom + 14, "text": f"{_label(t)} s", "anchor": "middle"})
    chart.lines.append(
        {"x1": LEFT, "y1": bottom, "x2": chart.width - RIGHT, "y2": bottom, "stroke": "#59636e"}
    )
    if faults_start is not None:
        x = LEFT + faults_start * scale
        chart.lines.append(
            {
                "x1": x,
                "y1": top,
                "x2": x,
                "y2": bottom,
                "stroke": "#1f2328",
                "dash": "5,3",
                "title": f"faults start at {faults_start:.1f} s (the schedule's zero)",
            }
        )


def anomaly_times(anomalies: list[dict[str, Any]]) -> list[tuple[float, int, dict[str, Any]]]:
    """(seconds, row number, anomaly) for the anomalies whose step was seen sealed."""
    out = []
    for i, a in enumerate(anomalies):
        ns = (a.get("context") or {}).get("sealed_by_ns")
        if isinstance(ns, int | float):
            out.append((ns / 1e9, i, a))
    return out


def lanes(tl: Timeline, anomalies: list[dict[str, Any]]) -> tuple[Chart, list[str]]:
    """The fault lanes chart and the legend groups it uses."""
    span = max(tl.end_s, 1.0)
    used = {m.group for m in tl.markers} | ({"anomaly"} if anomalies else set())
    rows = [name for name, groups in LANES.items() if name in ALWAYS or used & set(groups)]
    lane_h, top = 26, 8
    bottom = top + lane_h * len(rows)
    chart = Chart("faults, down-time and anomalies", bottom + 36, "seconds since the run started")
    scale = (chart.width - LEFT - RIGHT) / span
    for i, name in enumerate(rows):
        y0 = top + i * lane_h
        chart.rects.append(
            {
                "x": LEFT,
                "y": y0,
                "w": chart.width - LEFT - RIGHT,
                "h": lane_h,
                "fill": "#f6f8fa" if i % 2 == 0 else "#ffffff",
                "title": name,
            }
        )
        chart.texts.append({"x": LEFT - 8, "y": y0 + lane_h / 2 + 4, "text": name, "anchor": "end"})
    _x_axis(chart, span, top, bottom, tl.faults_start_s)
    lane_of = {g: rows.index(name) for name, gs in LANES.items() if name in rows for g in gs}
    for m in sorted(tl.markers, key=lambda m: m.end is None):  # bars under symbols
        y = top + lane_of[m.group] * lane_h + lane_h / 2
        if m.end is not None:
            chart.rects.append(_bar(m, scale, y - 7, 14))
        else:
            _mark(chart, m.group, LEFT + m.at * scale, y, f"{m.at:.1f} s: {m.label}")
    for t, i, a in anomaly_times(anomalies):
        y = top + lane_of["anomaly"] * lane_h + lane_h / 2
        _mark(
            chart, "anomaly", LEFT + min(t, span) * scale, y, _anomaly_title(t, a), f"#anomaly-{i}"
        )
    if not anomalies:
        y = top + lane_of["anomaly"] * lane_h + lane_h / 2 + 4
        chart.texts.append({"x": LEFT + 6, "y": y, "text": "none", "anchor": "start"})
    groups = [g for g in STYLE if g in used] + (
        ["faults-start"] if tl.faults_start_s is not None else []
    )
    return chart, groups


def _bar(m: Marker, scale: float, y: float, h: float) -> dict[str, Any]:
    end = m.end if m.end is not None else m.at
    return {
        "x": LEFT + m.at * scale,
        "y": y,
        "w": max((end - m.at) * scale, 2.0),
        "h": h,
        "fill": STYLE[m.group][0],
        "opacity": 0.6,
        "title": f"{m.at:.1f} to {end:.1f} s: {m.label}",
        "cls": f"mark mark-{m.group}",
    }


def _anomaly_title(t: float, a: dict[str, Any]) -> str:
    """A marker's hover title; an anomaly ``"of_state"`` is at a state of an output without
    bindings, first seen then (not a step sealed then)."""
    key = f" key {a['key']}" if a.get("key") is not None else ""
    where = "state" if a.get("of_state") else "step"
    then = "first seen then" if a.get("of_state") else "sealed then"
    return f"{t:.1f} s: {a.get('kind')}{key} at {where} {a.get('step')} ({then})"


def series(
    tl: Timeline,
    title: str,
    y_label: str,
    data: Mapping[str, Sequence[tuple[float, float]]],
    colors: dict[str, str],
    step: bool,
    anomalies: list[dict[str, Any]] | None = None,
) -> Chart:
    """A line chart over the run with down-time shaded, crashes as thin lines and (on the
    ``data`` series) the anomalies at their step."""
    span = max(tl.end_s, 1.0)
    top, bottom = 10, 200
    chart = Chart(title, bottom + 36, "seconds since the run started", y_label)
    scale = (chart.width - LEFT - RIGHT) / span
    top_v = max((v for pts in data.values() for _, v in pts), default=1) or 1
    ticks = nice_ticks(top_v, 5)
    y_max = ticks[-1] or 1

    def y(v: float) -> float:
        return bottom - (bottom - top) * v / y_max

    for v in ticks:
        chart.lines.append(
            {"x1": LEFT, "y1": y(v), "x2": chart.width - RIGHT, "y2": y(v), "stroke": "#eaeef2"}
        )
        chart.texts.append({"x": LEFT - 6, "y": y(v) + 4, "text": _label(v), "anchor": "end"})
    for m in tl.markers:
        if m.group == "down" and m.end is not None:
            chart.rects.append({**_bar(m, scale, top, bottom - top), "opacity": 0.25})
        elif m.group in ("kill", "failpoint"):
            x = LEFT + m.at * scale
            chart.lines.append(
                {
                    "x1": x,
                    "y1": top,
                    "x2": x,
                    "y2": bottom,
                    "stroke": STYLE[m.group][0],
                    "title": f"{m.at:.1f} s: {m.label}",
                }
            )
    _x_axis(chart, span, top, bottom, tl.faults_start_s)
    for name, pts in data.items():
        coords: list[str] = []
        prev: float | None = None
        for t, v in pts:
            if step and prev is not None:
                coords.append(f"{LEFT + t * scale:.1f},{y(prev):.1f}")
            coords.append(f"{LEFT + t * scale:.1f},{y(v):.1f}")
            prev = v
        if coords:
            chart.paths.append(
                {
                    "d": "M" + "L".join(coords),
                    "fill": "none",
                    "stroke": colors.get(name, "#1f2328"),
                    "width": 1.8,
                    "title": name,
                    "href": None,
                    "cls": "series",
                }
            )
    for n, name in enumerate(data):
        chart.texts.append(
            {
                "x": LEFT + 8 + 90 * n,
                "y": top + 12,
                "anchor": "start",
                "text": f"■ {name}",
                "fill": colors.get(name, "#1f2328"),
            }
        )
    for t, i, a in anomaly_times(anomalies or []):
        if isinstance(a.get("step"), int):
            _mark(
                chart,
                "anomaly",
                LEFT + min(t, span) * scale,
                y(min(a["step"] + 1, y_max)),
                _anomaly_title(t, a),
                f"#anomaly-{i}",
            )
    return chart
