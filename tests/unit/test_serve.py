"""`sealcheck serve` over a synthetic store, fetched over loopback: the index lists runs with
their nemeses and failing checkers (a broken results.json is "no result", not a crash) and
suites with every case's trend across nights; logs come as text; names are escaped; nothing
outside the store is served, nor listed; a run whose results.json no longer matches its
checkers or its report is UNKNOWN and marked, in the index, on its page and above its
report."""

from __future__ import annotations

import contextlib
import html
import http.client
import json
import re
import threading
import urllib.request
from collections.abc import Iterator
from email.message import Message
from pathlib import Path
from typing import Any

import pytest

from sealcheck.report.serve import STATE_COLORS, index_html, make_server
from sealcheck.report.suite_trend import case_summary, list_suites
from sealcheck.rundir.archive import write_plain_report

EVIL = "<script>alert(1)"
LOG = "step 3 sealed\n<b>not markup</b>\n"


def _json(path: Path, doc: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))


def _run(store: Path, name: str, started: str) -> Path:
    run = store / name / started
    (run / "logs").mkdir(parents=True)
    return run


def _night(store: Path, stamp: str, verdicts: dict[str, str], done: bool = True) -> None:
    night = store / "suites" / "nightly" / stamp
    runs = [
        {
            "case": c,
            "repeat": 0,
            "seed": 1,
            "verdict": v,
            "failing": [],
            "took_s": 0.0 if v == "SKIPPED" else 60.0,
        }
        for c, v in verdicts.items()
    ]
    doc = {"suite": "nightly", "done": done, "cases": 3, "runs": runs, "exit_code": 0}
    _json(night / "summary.json", doc)
    (night / "index.html").write_text("<html>night</html>")


def build_store(store: Path) -> Path:
    """Four runs (INVALID with two failing checkers, a corrupt results.json, an evil name,
    nothing at all) and four suite nights (one unreadable) in which case b turns INVALID."""
    bad = _run(store, "chaos", "20261120T000000")
    config = {"name": "chaos", "seed": 7, "nemeses": ["failpoint", "kill", "failpoint"]}
    _json(bad / "test.json", {"config": config, "took_s": 101.5})
    checkers = {
        "completeness": {"valid": False},
        "frontiers": {"valid": "unknown"},
        "bindings": {"valid": True},
    }
    _json(bad / "results.json", {"valid": False, "checkers": checkers})
    (bad / "report.html").write_text("<html>report</html>")
    (bad / "logs" / "sut-0.log").write_text(LOG)
    corrupt = _run(store, "chaos", "20261121T000000")
    _json(corrupt / "test.json", {"config": {"seed": 8, "nemeses": ["pause"]}})
    (corrupt / "results.json").write_text('{"valid": tr')
    evil = _run(store, EVIL, "20261122T000000")
    _json(evil / "test.json", {"config": {"seed": 9, "nemeses": [EVIL]}})
    _json(evil / "results.json", {"valid": False, "checkers": {EVIL: {"valid": False}}})
    _run(store, "empty", "20261119T000000")
    (store / "latest").symlink_to("chaos/20261120T000000")
    broken = store / "suites" / "nightly" / "20261121T060000"
    broken.mkdir(parents=True)
    (broken / "summary.json").write_text("not json")
    _night(store, "20261122T060000", {"a": "VALID", "b": "VALID"})
    _night(store, "20261123T060000", {"a": "VALID", "b": "VALID"})
    _night(store, "20261124T060000", {"a": "VALID", "b": "INVALID", "c": "SKIPPED"}, False)
    return store


@contextlib.contextmanager
def serving(store: Path) -> Iterator[str]:
    """The base URL of a server over ``store``, stopped on leaving."""
    server = make_server(store, 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    """The base URL of a server over the synthetic store, stopped after the test."""
    with serving(build_store(tmp_path / "store")) as url:
        yield url


def _get(url: str) -> tuple[str, Message]:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback, no proxy
    with opener.open(url, timeout=10) as resp:
        return resp.read().decode(), resp.headers


def _row(page: str, cls: str, marker: str) -> str:
    rows = re.findall(rf'<tr class="{cls}.*?</tr>', page, re.S)
    [row] = [r for r in rows if marker in r]
    return row


def test_the_index_lists_runs_with_nemeses_and_failing_checkers(served: str) -> None:
    page, headers = _get(served + "/")
    assert headers["Content-Type"] == "text/html; charset=utf-8"
    assert page.count('<tr class="run-row">') == 4  # not suites/ nor latest
    bad = _row(page, "run-row", "20261120T000000")
    assert 'class="verdict INVALID">INVALID<' in bad
    assert 'href="/chaos/20261120T000000/report.html"' in bad
    assert '<td class="nemeses">failpoint x2, kill</td>' in bad
    assert ">completeness, frontiers (UNKNOWN)<" in bad and "bindings" not in bad
    assert ">7<" in bad and ">101.5<" in bad
    corrupt = _row(page, "run-row", "20261121T000000")
    assert "NO RESULT" in corrupt and "unreadable results.json (JSONDecodeError)" in corrupt
    assert '<td class="nemeses">pause</td>' in corrupt and "report.html" not in corrupt
    empty = _row(page, "run-row", "20261119T000000")
    assert "no test.json" in empty and "no results.json" in empty
    starts = re.findall(r"/ (\d{8}T\d{6})", page)
    assert starts == sorted(starts, reverse=True)  # newest first


def test_names_from_a_run_are_text_not_markup(served: str) -> None:
    page, _ = _get(served + "/")
    assert "<script" not in page
    evil = _row(page, "run-row", "20261122T000000")
    assert evil.count("&lt;script&gt;alert(1)") == 3  # run name, nemesis, failing checker
    assert 'href="/%3Cscript%3Ealert%281%29/20261122T000000/"' in evil


def test_suites_show_each_night_and_every_case_across_nights(served: str) -> None:
    page, _ = _get(served + "/")
    b = _row(page, "case-row", 'data-case="b"')
    assert re.findall(r'class="cell (\w+)"', b) == ["NONE", "VALID", "VALID", "INVALID"]
    assert "changed" in b.split(">")[0]
    line = "case b: valid for 2 nights, INVALID since 20261124T060000"
    assert f'<li class="changed-line">{line}</li>' in page
    a = _row(page, "case-row", 'data-case="a"')
    assert re.findall(r'class="cell (\w+)"', a) == ["NONE", "VALID", "VALID", "VALID"]
    assert "case a: valid for 3 nights" in a and "changed" not in a.split(">")[0]
    c = _row(page, "case-row", 'data-case="c"')
    assert re.findall(r'class="cell (\w+)"', c) == ["NONE", "NONE", "NONE", "SKIPPED"]
    assert "case c: skipped in every night" in c
    assert 'title="20261121T060000: unreadable summary.json (JSONDecodeError' in a
    nights = re.findall(r'<tr class="night-row">.*?</tr>', page, re.S)
    assert [re.search(r"\d{8}T\d{6}", n)[0] for n in nights] == [  # type: ignore[index]
        "20261124T060000",
        "20261123T060000",
        "20261122T060000",
        "20261121T060000",
    ]
    newest = [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td.*?</td>", nights[0])]
    assert newest == [
        "20261124T060000",
        "running (or stopped)",
        "1",
        "1",
        "0",
        "1",
        "3",
        "120 s",
    ]
    assert 'href="/suites/nightly/20261124T060000/index.html"' in nights[0]
    assert "unreadable summary.json" in nights[3]
    night, _ = _get(served + "/suites/nightly/20261124T060000/index.html")
    assert night == "<html>night</html>"


def test_logs_and_json_are_shown_as_text(served: str) -> None:
    log, headers = _get(served + "/chaos/20261120T000000/logs/sut-0.log")
    assert log == LOG
    assert headers["Content-Type"] == "text/plain; charset=utf-8"
    assert headers["X-Content-Type-Options"] == "nosniff"
    doc, headers = _get(served + "/latest/test.json")
    assert json.loads(doc)["config"]["seed"] == 7
    assert headers["Content-Type"] == "application/json; charset=utf-8"
    _, headers = _get(served + "/chaos/20261120T000000/report.html")
    assert headers["Content-Type"] == "text/html"


def _status(base: str, path: str) -> tuple[int, bytes]:
    """The status and body of GET ``path`` sent as it is (no client-side normalising)."""
    host, port = base.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def test_nothing_outside_the_store_is_served(served: str, tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("secret")
    (tmp_path / "store" / "leak").symlink_to(tmp_path)
    (tmp_path / "store" / "chaos" / "20261120T000000" / "leak.txt").symlink_to(
        tmp_path / "secret.txt"
    )
    paths = [
        "/../secret.txt",
        "/%2e%2e/secret.txt",
        "/chaos/../../secret.txt",
        "/chaos/..%2f..%2fsecret.txt",
        "/chaos/20261120T000000/leak.txt",
        "/leak/",
        "/leak/secret.txt",
        "/%00",  # no file has a NUL in its name: refused, not a dropped connection
        "/chaos/20261120T000000/%00/report.html",
    ]
    for path in paths:
        status, body = _status(served, path)
        assert (path, status, b"secret" in body) == (path, 404, False)
    # and what cannot be served is not listed: the run's files leave the link out
    files, _ = _get(served + "/chaos/20261120T000000/")
    assert "leak.txt" not in files and 'href="logs/"' in files and 'href="report.html"' in files


def test_a_run_folder_symlinked_from_outside_the_store_is_not_listed(tmp_path: Path) -> None:
    store = build_store(tmp_path / "store")
    outside = _run(tmp_path / "elsewhere", "chaos", "20261125T000000")
    _json(outside / "results.json", {"valid": False, "checkers": {"prefix": {"valid": False}}})
    (store / "chaos" / "20261125T000000").symlink_to(outside)
    inner = store / "chaos" / "20261126T000000"  # a symlink within the store is served
    inner.symlink_to(store / "chaos" / "20261120T000000")
    page = index_html(store)
    assert "20261125T000000" not in page and "20261126T000000" in page
    with serving(store) as url:
        assert _status(url, "/chaos/20261125T000000/results.json")[0] == 404
        assert _status(url, "/chaos/20261126T000000/report.html")[0] == 200


def test_a_store_without_runs_or_suites_says_so(tmp_path: Path) -> None:
    page = index_html(tmp_path)
    assert "No runs yet" in page and "No suites yet" in page
    assert list_suites(tmp_path) == []


def test_files_of_the_wrong_shape_are_not_a_crash(tmp_path: Path) -> None:
    run = _run(tmp_path, "odd", "20261120T000000")
    _json(run / "test.json", {"config": ["not", "a", "dict"]})
    _json(run / "results.json", {"valid": [1], "checkers": {"x": "no"}})
    night = tmp_path / "suites" / "s" / "20261120T000000"
    _json(night / "summary.json", {"runs": "nope"})
    page = index_html(tmp_path)
    assert 'class="verdict UNKNOWN"' in page and ">x (UNKNOWN)<" in page
    assert "unreadable summary.json" in page


@pytest.mark.parametrize(
    ("states", "current", "changed", "line"),
    [
        (["VALID"] * 5 + ["INVALID"], "INVALID", True, "valid for 5 nights, INVALID since n5"),
        (
            ["INVALID", "VALID", "NONE", "VALID"],
            "VALID",
            False,
            "INVALID for 1 night, valid since n1 (2 nights)",
        ),
        (
            ["UNKNOWN", "SKIPPED", "INVALID"],
            "INVALID",
            True,
            "UNKNOWN for 1 night, INVALID since n2",
        ),
        (["INVALID", "INVALID"], "INVALID", False, "INVALID for 2 nights"),
        (
            ["VALID", "UNKNOWN", "VALID", "NONE", "INVALID", "VALID"],
            "VALID",
            True,
            "INVALID for 1 night, valid since n5; 4 changes in 5 nights",
        ),
        (["NONE", "NONE"], None, False, "not run in every night"),
    ],
)
def test_a_case_summary_names_the_streak_and_what_was_before(
    states: list[str], current: str | None, changed: bool, line: str
) -> None:
    history = [(f"n{i}", s) for i, s in enumerate(states)]
    assert case_summary("x", history) == (current, changed, f"case x: {line}")


def test_a_results_json_edited_to_valid_is_shown_unknown_and_marked(tmp_path: Path) -> None:
    """The issue's run: INVALID, then its top-level valid edited to true."""
    store = tmp_path / "store"
    edited = _run(store, "chaos", "20261129T101500")
    failing = ("completeness", "prefix", "sealed_state")
    checkers = {n: {"valid": False} for n in failing}
    _json(edited / "results.json", {"valid": True, "checkers": checkers})
    write_plain_report(edited, "INVALID", ["the report as the run wrote it"])
    good = _run(store, "chaos", "20261129T090000")
    _json(good / "results.json", {"valid": True, "checkers": {"prefix": {"valid": True}}})
    write_plain_report(good, "VALID", [])
    why = (
        "results.json does not match its checkers (top-level valid: true, its checkers: "
        f"invalid): the file was changed after the run; re-judge it with `sealcheck check "
        f"{edited.resolve()}`"
    )
    with serving(store) as url:
        page, _ = _get(url + "/")
        row = _row(page, "run-row", "20261129T101500")
        assert '<td class="verdict UNKNOWN">UNKNOWN<span class="changed">files changed' in row
        assert "completeness, prefix, sealed_state" in row
        assert f'<span class="problem mismatch">{html.escape(why)}</span>' in row
        assert "VALID<" not in row.replace("UNKNOWN<", "")
        assert f".UNKNOWN {{ background: {STATE_COLORS['UNKNOWN']}; }}" in page
        assert STATE_COLORS["UNKNOWN"] != STATE_COLORS["VALID"]
        assert 'class="verdict VALID">VALID<' in _row(page, "run-row", "20261129T090000")
        files, _ = _get(url + "/chaos/20261129T101500/")
        assert '<span class="verdict UNKNOWN">UNKNOWN</span>' in files
        assert f'<p class="mismatch">{html.escape(why)}</p>' in files
        assert "failing checkers: completeness, prefix, sealed_state" in files
        report, headers = _get(url + "/chaos/20261129T101500/report.html")
        assert headers["Content-Length"] == str(len(report.encode()))
        banner = report.index('id="sealcheck-serve-mismatch"')
        assert report.index("<body>") < banner < report.index('<h1 id="verdict">INVALID')
        assert html.escape(why) in report
        kept, _ = _get(url + "/chaos/20261129T090000/report.html")
        assert kept == (good / "report.html").read_text()  # files that agree: as stored
        assert "sealcheck-serve-mismatch" not in _get(url + "/chaos/20261129T090000/")[0]


def test_a_fifo_in_a_runs_place_never_hangs_the_index(tmp_path: Path) -> None:
    """A FIFO named results.json, test.json or report.html is shown as unreadable; the page is
    drawn at once (a read of it would wait for a writer for ever)."""
    import os
    import subprocess
    import sys

    run = tmp_path / "runs" / "chaos" / "20261129T101500"
    run.mkdir(parents=True)
    for name in ("results.json", "test.json", "report.html"):
        os.mkfifo(run / name)
    code = (
        "import sys; from pathlib import Path; from sealcheck.report.serve import read_run;"
        "print(read_run(Path(sys.argv[1]).parents[1], Path(sys.argv[1])))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(run)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "not a regular file of the run" in done.stdout
