"""The on-call report's time base, fault markers, charts and words, on a hand-made history."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from sealcheck.core.roles import BUILT_IN
from sealcheck.nemeses.registry import marks as nemesis_marks
from sealcheck.report import chart
from sealcheck.report.explain import context_lines, schedule_rows
from sealcheck.report.job_versions import version_rows
from sealcheck.report.report import render
from sealcheck.report.timeline import Marker, build_timeline
from sealcheck.rundir.history import History


def _op(i: int, s: float, process: str, type_: str, f: str, value: Any) -> dict[str, Any]:
    return {
        "index": i,
        "time": int(s * 1e9),
        "process": process,
        "type": type_,
        "f": f,
        "value": value,
    }


OPS = [
    _op(0, 1, "supervisor", "info", "sut-start", {"incarnation": 0, "pid": 10}),
    _op(1, 2, "w0", "ok", "write", {"key": "a", "value": "{}", "partition": 0, "offset": 0}),
    _op(2, 10, "harness", "info", "warmed-up", {"took_s": 9.0, "sealed": True}),
    _op(3, 10.5, "harness", "info", "faults-start", {"duration_s": 30}),
    _op(4, 12, "nemesis", "invoke", "arm-failpoint", {"failpoint": "data.mid_append", "action": 0}),
    _op(
        5,
        13,
        "supervisor",
        "info",
        "sut-exit",
        {"incarnation": 0, "code": -9, "failpoint": "data.mid_append"},
    ),
    _op(
        6,
        13.5,
        "nemesis",
        "info",
        "outcome",
        {"action": 0, "f": "arm-failpoint", "outcome": "happened"},
    ),
    _op(7, 15, "supervisor", "info", "sut-start", {"incarnation": 1, "pid": 11}),
    _op(8, 16, "observer", "info", "uppers", {"data": 3, "bindings": 3, "errors": 3}),
    _op(9, 18, "nemesis", "invoke", "pause-pipeline", {"action": 1}),
    _op(10, 21, "nemesis", "invoke", "resume-pipeline", {"action": 2}),
    _op(
        11,
        22,
        "nemesis",
        "invoke",
        "arm-failpoint",
        {"failpoint": "bindings.before_append", "action": 3},
    ),
    _op(
        12,
        30,
        "nemesis",
        "info",
        "outcome",
        {"action": 3, "f": "arm-failpoint", "outcome": "missed", "why": "replaced by a kill"},
    ),
    _op(13, 31, "nemesis", "invoke", "kill-pipeline", {"action": 4}),
    _op(
        14,
        31.2,
        "supervisor",
        "info",
        "sut-exit",
        {"incarnation": 1, "code": -9, "failpoint": None},
    ),
    _op(15, 33, "supervisor", "info", "sut-start", {"incarnation": 2, "pid": 12}),
    _op(
        16,
        40,
        "supervisor",
        "info",
        "sut-exit",
        {"incarnation": 2, "code": 0, "failpoint": None},
    ),
]
SCHEDULE = [
    {
        "at_s": 1.0,
        "nemesis": "failpoint",
        "f": "arm-failpoint",
        "value": {"failpoint": "data.mid_append"},
    },
    {"at_s": 7.0, "nemesis": "pause", "f": "pause-pipeline", "value": {}},
    {"at_s": 10.0, "nemesis": "pause", "f": "resume-pipeline", "value": {}},
    {
        "at_s": 11.0,
        "nemesis": "failpoint",
        "f": "arm-failpoint",
        "value": {"failpoint": "bindings.before_append"},
    },
    {"at_s": 20.0, "nemesis": "kill", "f": "kill-pipeline", "value": {}},
]


def _history(tmp_path: Path) -> History:
    path = tmp_path / "history.jsonl"
    path.write_text("".join(json.dumps(o) + "\n" for o in OPS))
    return History.load(path)


def test_every_fault_gets_its_legend_group_on_the_runs_time_base(tmp_path: Path) -> None:
    tl = build_timeline(_history(tmp_path), nemesis_marks(BUILT_IN))
    assert tl.faults_start_s == 10.5  # the schedule's zero, not the warm-up's end
    by = {(m.group, m.at) for m in tl.markers}
    assert ("failpoint", 13.0) in by  # drawn where it fired (the exit), not where armed
    assert ("failpoint-idle", 22.0) in by  # armed, never fired: apart, where armed
    assert ("kill", 31.0) in by
    assert Marker("pause", 18.0, 21.0, "sut frozen") in tl.markers
    down = [(m.at, m.end) for m in tl.markers if m.group == "down"]
    assert down == [(13.0, 15.0), (31.2, 33.0)]  # the clean stop at the end is no down-time
    idle = next(m for m in tl.markers if m.group == "failpoint-idle")
    assert "bindings.before_append" in idle.label and "replaced by a kill" in idle.label


def test_charts_have_real_axes_a_legend_and_anomaly_markers(tmp_path: Path) -> None:
    assert chart.nice_ticks(37) == [0, 5, 10, 15, 20, 25, 30, 35, 40]
    assert chart.nice_ticks(0.3, 3) == [0, 0.1, 0.2, 0.3]
    tl = build_timeline(_history(tmp_path), nemesis_marks(BUILT_IN))
    anomaly = {"kind": "diff-not-0-or-1", "key": "k1", "step": 2, "context": {"sealed_by_ns": 16e9}}
    lanes, legend = chart.lanes(tl, [anomaly])
    assert legend[:4] == ["down", "start", "kill", "failpoint"]
    assert {"failpoint-idle", "pause", "anomaly", "faults-start"} <= set(legend)
    marks = [p for p in lanes.paths if p["cls"] == "mark mark-anomaly"]
    assert len(marks) == 1 and marks[0]["href"] == "#anomaly-0" and "k1" in marks[0]["title"]
    assert [t["text"] for t in lanes.texts if t["text"].endswith(" s")][:3] == [
        "0 s",
        "5 s",
        "10 s",
    ]
    series = chart.series(tl, "uppers", "step", tl.uppers, {}, step=True, anomalies=[anomaly])
    assert any(p["cls"] == "mark mark-anomaly" for p in series.paths)
    assert any(r.get("cls") == "mark mark-down" for r in series.rects)  # down-time shaded


def test_context_and_schedule_read_as_sentences_on_one_time_base() -> None:
    lines = context_lines(
        {
            "sealed_by_ns": 33_500_000_000,
            "last_nemesis": {"time": 31_000_000_000, "f": "kill-pipeline", "value": {"action": 4}},
            "last_sut_start": {"time": 33_000_000_000, "value": {"incarnation": 2}},
            "batch": "batch 3: data v7, errors v6",
        }
    )
    assert lines[0] == "step first seen sealed at 33.5 s"
    assert lines[1].startswith("2.5 s after kill-pipeline (at 31.0 s")
    assert lines[2].startswith("0.5 s after incarnation 2 started")
    assert lines[3] == "batch 3: data v7, errors v6"
    rows = schedule_rows(SCHEDULE, OPS, 10.5)
    assert rows[0]["planned"] == "11.5 s" and rows[0]["happened"] == "12.0 s"
    assert rows[0]["late"] == "+0.5 s" and rows[0]["outcome"] == "happened"
    assert rows[3]["outcome"] == "missed" and rows[3]["why"] == "replaced by a kill"


def test_the_page_states_its_time_base_and_escapes_everything(tmp_path: Path) -> None:
    _history(tmp_path)
    (tmp_path / "test.json").write_text(
        json.dumps({"config": {"name": "<b>x</b>", "seed": 1}, "schedule": SCHEDULE})
    )
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "sut-1.log").write_text("hello\n")
    page = render(tmp_path)
    assert "0 s is when the harness started this run" in page and "<b>10.5 s</b>" in page
    assert "&lt;b&gt;x&lt;/b&gt;" in page and "<b>x</b>" not in page
    assert 'id="legend"' in page and 'href="logs/sut-1.log"' in page
    assert "UNKNOWN" in page and "Nothing was proved either way" in page  # no results.json


def test_an_upgrade_has_its_lane_and_each_start_names_its_version(tmp_path: Path) -> None:
    ops = [
        _op(0, 0.5, "harness", "info", "version", {"incarnation": 0, "version": "v1"}),
        _op(1, 1, "supervisor", "info", "sut-start", {"incarnation": 0, "pid": 10}),
        _op(2, 10, "harness", "info", "faults-start", {"duration_s": 30}),
        _op(3, 12, "nemesis", "invoke", "upgrade", {"from": "v1", "to": "v2", "action": 0}),
        _op(4, 12.2, "harness", "info", "version", {"incarnation": 1, "version": "v2"}),
        _op(5, 12.3, "supervisor", "info", "sut-start", {"incarnation": 1, "pid": 11}),
    ]
    path = tmp_path / "history.jsonl"
    path.write_text("".join(json.dumps(o) + "\n" for o in ops))
    tl = build_timeline(History.load(path), nemesis_marks(BUILT_IN))
    starts = [m.label for m in tl.markers if m.group == "start"]
    assert starts == ["incarnation 0 started (v1)", "incarnation 1 started (v2)"]
    [upgrade] = [m for m in tl.markers if m.group == "upgrade"]
    assert upgrade.at == 12.0 and "v2" in upgrade.label
    # an anomaly's context names the version that ran from each start and exit on
    history = History.load(path)
    lines = context_lines({"sealed_by_ns": 14_000_000_000, **history.context_at(13_000_000_000)})
    assert any(line.startswith("1.7 s after incarnation 1 (v2) started") for line in lines), lines
    before = context_lines(history.context_at(5_000_000_000))
    assert before == [
        "step never seen sealed",
        "the last start before: incarnation 0 (v1) started at 1.0 s",
    ], before
    # a fault's evidence reads as the sentence it is, not as a dict
    done = {"to": "v2", "effect": {"effect": True, "evidence": "9 (v1) stopped by SIGKILL"}}
    [line] = context_lines({"last_nemesis": {"f": "upgrade", "value": done}}, states=True)
    assert line == "the last fault before: upgrade to=v2 (9 (v1) stopped by SIGKILL)", line


def test_each_version_has_its_incarnations_and_the_steps_sealed_while_it_ran() -> None:
    ops = [
        _op(0, 0.5, "harness", "info", "version", {"incarnation": 0, "version": "v1"}),
        _op(1, 1, "supervisor", "info", "sut-start", {"incarnation": 0, "pid": 10}),
        _op(2, 5, "observer", "info", "uppers", {"data": 4}),
        _op(3, 6, "harness", "info", "version", {"incarnation": 1, "version": "v1"}),
        _op(4, 6.1, "supervisor", "info", "sut-start", {"incarnation": 1, "pid": 11}),
        _op(5, 9, "observer", "info", "uppers", {"data": 6}),
        _op(6, 12.2, "harness", "info", "version", {"incarnation": 2, "version": "v2"}),
        _op(7, 12.3, "supervisor", "info", "sut-start", {"incarnation": 2, "pid": 12}),
        _op(8, 20, "observer", "info", "uppers", {"data": 9}),
    ]
    history = dataclasses.replace(History.empty(), ops=ops)
    assert history.versions() == {0: "v1", 1: "v1", 2: "v2"}
    v1, v2 = version_rows(history)
    assert (v1.version, v1.incarnations, v1.first, v1.last) == ("v1", (0, 1), 0, 5)
    assert (v2.version, v2.incarnations, v2.first, v2.last) == ("v2", (2,), 6, 8)
    assert (v1.from_s, v1.to_s, v2.to_s) == (1.0, 12.3, 20.0)
    without = dataclasses.replace(history, ops=ops[1:3])
    assert version_rows(without) == []  # a system without versions: no section
