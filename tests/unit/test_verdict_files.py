"""The verdict file is written only by a complete judgement, and every input problem is UNKNOWN
in one line (issue 24).

Each test is one case a user found: a check of some checkers that rewrote an INVALID verdict as
VALID; a check that died and left an older VALID; a broken, unreadable or changed input that
ended in a traceback; a file the manifest does not list that was judged anyway; text after the
final op taken for a harness that died; a line cut out of the history reported after its
consequences."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from sealcheck import checkers
from sealcheck.checkers import check_run, load_run
from sealcheck.harness.campaigns.verdicts import read_result
from sealcheck.harness.cli import app as cli
from sealcheck.report.serve import read_run
from sealcheck.report.suite_trend import read_night
from sealcheck.rundir.archive import PARTIAL, list_runs
from sealcheck.rundir.files import TopicRecord
from tests.runs import stored_run, write_history


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    return stored_run(tmp_path)


Written = tuple[list[TopicRecord], dict[str, int]]


def written(run_dir: Path) -> Written:
    """What the harness wrote and observed in the run (to write its history again)."""
    topic = pl.read_parquet(run_dir / "topic.parquet")
    frontiers = json.loads((run_dir / "export" / "frontiers.json").read_text())
    records = [TopicRecord(*row) for row in topic.iter_rows()]
    return records, {c: f["upper"] for c, f in frontiers.items()}


def rerecord(run_dir: Path, was: Written | None = None) -> None:
    """Write the history again, so its final op records the files as they are now (a file that
    was already broken when the harness recorded it)."""
    records, uppers = was or written(run_dir)
    (run_dir / "history.jsonl").unlink()
    write_history(run_dir, records, uppers)


def results(run_dir: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((run_dir / "results.json").read_text())
    return doc


def check(run_dir: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str]:
    """``sealcheck check``: its exit code and everything it printed (no traceback allowed)."""
    code = cli.main(["check", str(run_dir), *extra])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err and code != cli.EXIT_CRASH, out + err
    return code, out + err


def verdict_line(out: str) -> str:
    [line] = [x for x in out.splitlines() if x.startswith("verdict: ")]
    return line


def make_invalid(run_dir: Path) -> None:
    """The run as it would be had the system lost one update of ``data`` (recorded as such)."""
    path = run_dir / "export" / "updates.parquet"
    updates = pl.read_parquet(path)
    data = updates.with_row_index("i").filter(pl.col("collection") == "data")
    victim = int(data["i"][data.height // 2])
    updates.with_row_index("i").filter(pl.col("i") != victim).drop("i").write_parquet(path)
    rerecord(run_dir)


# 1. A check of some checkers never replaces the run's verdict.


def test_a_partial_check_leaves_the_verdict_and_the_report_byte_for_byte(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_invalid(run_dir)
    assert check(run_dir, capsys)[0] == cli.EXIT_INVALID
    before = {n: (run_dir / n).read_bytes() for n in ("results.json", "report.html")}
    code, out = check(run_dir, capsys, "--checker", "as_of", "--checker", "bindings")
    assert {n: (run_dir / n).read_bytes() for n in before} == before
    assert code in (cli.EXIT_VALID, cli.EXIT_UNKNOWN)  # its own result, printed
    first = out.splitlines()[0]
    assert "as_of, bindings (2 of" in first and "not the run's verdict" in first
    assert "partial result: " in out and "verdict is unchanged" in out
    doc = json.loads((run_dir / PARTIAL).read_text())
    assert doc["partial"]["checkers_run"] == ["as_of", "bindings"]
    assert "sealed_state" in doc["not_run"]
    assert "not the run's verdict" in doc["partial"]["note"]
    assert set(doc["checkers"]) == {"as_of", "bindings"}
    assert read_result(run_dir, 11, 0, "").verdict == "INVALID"  # still the run's verdict


def test_every_checker_named_is_a_full_check(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    every = [a for name in checkers.CHECKERS for a in ("--checker", name)]
    assert check(run_dir, capsys, *every)[0] == cli.EXIT_VALID
    assert results(run_dir)["valid"] is True and not (run_dir / PARTIAL).exists()


# 2. Before judging, the stored verdict says it is being re-judged.


def test_a_check_that_dies_leaves_unknown_being_re_judged_everywhere(
    run_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert check(run_dir, capsys)[0] == cli.EXIT_VALID
    seen: list[dict[str, Any]] = []

    def dies(path: Path, names: list[str] | None = None) -> None:
        seen.append(results(path))  # what a reader sees while the check runs
        raise MemoryError("killed mid-check")

    monkeypatch.setattr(checkers, "check_run", dies)
    assert cli.main(["check", str(run_dir)]) == cli.EXIT_CRASH
    capsys.readouterr()
    doc = results(run_dir)
    assert seen == [doc] and doc["valid"] == "unknown" and doc["checkers"] == {}
    [why] = doc["inputs"]["problems"]
    assert why.startswith("being re-judged by `sealcheck check` since ")
    assert "if this stays, the check died: run it again" in why
    assert "being re-judged" in (run_dir / "report.html").read_text()
    assert "VALID" not in (run_dir / "report.html").read_text().replace("UNKNOWN", "")
    store = run_dir.parent.parent  # <store>/<test>/<run>
    row = read_run(store, run_dir)
    assert (row.state, row.reason) == ("UNKNOWN", why)
    res = read_result(run_dir, 11, 2, "")
    assert (res.verdict, res.reason) == ("UNKNOWN", why)
    assert res.summary().splitlines()[1] == f"  unknown because: {why}"
    [summary] = [r for r in list_runs(store) if r.path == run_dir]
    assert (summary.valid, summary.reason) == ("unknown", why)
    from sealcheck.report.report import render

    assert "has not finished" in render(run_dir)  # the full report of the marker says so too


def test_an_unknown_run_is_listed_with_its_reason(tmp_path: Path) -> None:
    run = tmp_path / "store" / "t" / "20260101T000000"
    run.mkdir(parents=True)
    checkers_doc = {
        "diff_of_one": {"valid": True},
        "frontiers": {"valid": "unknown", "error": "the history has no observed uppers"},
    }
    doc = {"valid": "unknown", "inputs": {"problems": []}, "checkers": checkers_doc}
    (run / "results.json").write_text(json.dumps(doc))
    row = read_run(tmp_path / "store", run)
    assert row.reason == "frontiers: the history has no observed uppers"
    (run / "results.json").write_text(json.dumps({**doc, "partial": {"checkers_run": ["x"]}}))
    assert read_result(run, 1, 0, "").verdict == "UNKNOWN"  # a partial check is no verdict
    assert read_run(tmp_path / "store", run).state == "UNKNOWN"


def test_a_suite_night_names_why_a_case_was_unknown(tmp_path: Path) -> None:
    run = tmp_path / "runs" / "c" / "1"
    run.mkdir(parents=True)
    (run / "results.json").write_text(
        json.dumps({"valid": "unknown", "inputs": {"problems": ["history.jsonl line 7: cut"]}})
    )
    runs = [
        {"case": "a", "verdict": "UNKNOWN", "reason": "being re-judged since then"},
        {"case": "b", "verdict": "UNKNOWN", "report": str(run / "report.html")},  # older
        {"case": "c", "verdict": "VALID"},
    ]
    night = tmp_path / "night"
    night.mkdir()
    (night / "summary.json").write_text(json.dumps({"runs": runs, "cases": 3, "done": True}))
    read = read_night(night, "suites/s/night")
    assert read.reasons == {"a": "being re-judged since then", "b": "history.jsonl line 7: cut"}
    from sealcheck.report.suite_trend import trend

    cells = {t.case: t.cells[0].title for t in trend([read])}
    assert cells["a"] == "night: UNKNOWN: being re-judged since then"
    assert cells["c"] == "night: VALID"


# 3. Every input problem is UNKNOWN, exit 2, one line naming the file; no VALID left behind.


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _bad_json(path: Path) -> None:
    path.write_text('{"data": {"upper": 3,')


def _upper_not_int(path: Path) -> None:
    doc = json.loads(path.read_text())
    doc["data"]["upper"] = "seven"
    path.write_text(json.dumps(doc))


def _ts_as_text(path: Path) -> None:
    frame = pl.read_parquet(path)
    frame.with_columns(pl.lit("soon").alias("ts")).write_parquet(path)


def _a_directory(path: Path) -> None:
    path.unlink()
    path.mkdir()


BROKEN = {
    "truncated topic": ("topic.parquet", _truncate),
    "truncated updates": ("export/updates.parquet", _truncate),
    "corrupt frontiers": ("export/frontiers.json", _bad_json),
    "upper not an int": ("export/frontiers.json", _upper_not_int),
    "ts of the wrong type": ("export/updates.parquet", _ts_as_text),
    "updates a directory": ("export/updates.parquet", _a_directory),
}


@pytest.mark.parametrize("recorded", [False, True], ids=["changed-after", "broken-when-recorded"])
@pytest.mark.parametrize("case", list(BROKEN))
def test_a_broken_input_is_unknown_in_one_line_naming_the_file(
    run_dir: Path, capsys: pytest.CaptureFixture[str], case: str, recorded: bool
) -> None:
    assert check(run_dir, capsys)[0] == cli.EXIT_VALID  # a VALID verdict to be replaced
    rel, breaks = BROKEN[case]
    if recorded and case == "updates a directory":
        pytest.skip("the harness records no directory")
    was = written(run_dir)
    breaks(run_dir / rel)
    if recorded:
        rerecord(run_dir, was)
    code, out = check(run_dir, capsys)
    assert code == cli.EXIT_UNKNOWN
    doc = results(run_dir)
    assert doc["valid"] == "unknown"
    reason = doc["inputs"]["problems"][0]
    assert rel in reason and "\n" not in reason, reason
    assert verdict_line(out).startswith(f"verdict: unknown: {reason}")
    assert 'id="verdict"' in (run_dir / "report.html").read_text()


def test_an_unreadable_file_is_unknown_naming_it(
    run_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tests may run as root, for whom no mode bit makes a file unreadable: the read fails."""
    frontiers = run_dir / "export" / "frontiers.json"
    real = Path.read_text

    def read_text(self: Path, *args: Any, **kwargs: Any) -> str:
        if self == frontiers:
            raise PermissionError(13, "Permission denied", str(self))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", read_text)
    assert check(run_dir, capsys)[0] == cli.EXIT_UNKNOWN
    reason = results(run_dir)["inputs"]["problems"][0]
    assert "frontiers.json" in reason and "PermissionError: Permission denied" in reason


def test_an_unreadable_history_is_unknown_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = stored_run(tmp_path, run_id="r")  # judged without it: every file is the run's
    _a_directory(run_dir / "history.jsonl")
    assert check(run_dir, capsys)[0] == cli.EXIT_UNKNOWN
    reason = results(run_dir)["inputs"]["problems"][0]
    assert f"{run_dir / 'history.jsonl'} is a directory, not a regular file" in reason


# 4. The manifest is the closed list of what checkers read.


def _asof(run_dir: Path) -> None:
    """Snapshots that contradict the run: judged, they would make it INVALID."""
    pl.DataFrame(
        {"collection": ["data"], "ts": [1], "key": [b"nobody"], "value": [b"nothing"]},
        schema={"collection": pl.String, "ts": pl.Int64, "key": pl.Binary, "value": pl.Binary},
    ).write_parquet(run_dir / "export" / "asof.parquet")


def test_a_file_the_manifest_does_not_list_is_not_read_only_named(run_dir: Path) -> None:
    _asof(run_dir)
    versions = {"tables": {"data": {"1": {"batch": 1}}}}
    (run_dir / "export" / "versions.json").write_text(json.dumps(versions))
    run = load_run(run_dir)
    assert run.asof is None and run.step_names == {}
    res = check_run(run_dir)
    assert res.valid is True, res.to_json()
    for rel in ("export/asof.parquet", "export/versions.json"):
        assert any(n.startswith(f"{rel} is not in the manifest") for n in res.notes), res.notes
    rerecord(run_dir)  # listed, the same snapshots are judged
    assert load_run(run_dir).asof is not None and load_run(run_dir).step_names
    assert check_run(run_dir).checkers["as_of"].valid is False


def test_a_required_input_the_manifest_does_not_list_refuses_the_run(run_dir: Path) -> None:
    path = run_dir / "history.jsonl"
    ops = [json.loads(line) for line in path.read_text().splitlines()]
    del ops[-1]["value"]["files"]["topic.parquet"]
    path.write_text("".join(json.dumps(op) + "\n" for op in ops))
    res = check_run(run_dir)
    assert res.valid is None and res.checkers == {}
    assert res.input_problems[0].startswith("topic.parquet is not in the manifest")


def test_without_a_final_op_the_inputs_are_judged_but_never_valid(tmp_path: Path) -> None:
    run_dir = stored_run(tmp_path, run_id="r")  # every file carries its run id
    path = run_dir / "history.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:-1]))
    res = check_run(run_dir)
    assert res.valid is None and res.checkers  # judged, as before
    assert "without the harness's final 'inputs' op" in res.input_problems[0]


# 5. Text after the final op is a file changed after the run, not a harness that died.


def test_lines_after_the_final_op_are_a_changed_file(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with open(run_dir / "history.jsonl", "a") as fh:
        fh.write("garbage\n")
    assert check(run_dir, capsys)[0] == cli.EXIT_UNKNOWN
    reason = results(run_dir)["inputs"]["problems"][0]
    assert reason.endswith(
        "history.jsonl: 8 bytes after the final op: the file changed after the run ended; "
        "restore it from the run, or re-run the test"
    )
    assert not any("torn" in n for n in results(run_dir)["inputs"]["notes"])


def test_a_torn_line_before_any_final_op_is_a_harness_that_died(tmp_path: Path) -> None:
    run_dir = stored_run(tmp_path, run_id="r")  # every file carries its run id
    path = run_dir / "history.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:-1]) + lines[-1][:30])  # died writing the final op
    res = check_run(run_dir)
    assert res.valid is None
    assert "without the harness's final 'inputs' op" in res.input_problems[0]
    assert any("torn last line (30 bytes)" in n for n in res.notes)


# 6. A line cut out of the history is the reason, before what it caused.


def test_a_line_cut_out_is_the_reason_printed_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = stored_run(tmp_path, run_id="r")  # judged without its history: its own files
    path = run_dir / "history.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    assert '"f":"uppers"' in lines[1]  # the observer's only op (the acks are beside)
    path.write_text("".join(lines[:1] + lines[2:]))
    code, out = check(run_dir, capsys)
    assert code == cli.EXIT_UNKNOWN
    reason = results(run_dir)["inputs"]["problems"][0]
    assert "history.jsonl line 2: expected op index 1, found 2" in reason
    assert reason in verdict_line(out)
    assert out.index("line 2:") < out.index("no observed uppers")


def test_a_report_that_cannot_be_drawn_after_a_run_leaves_a_plain_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from types import SimpleNamespace

    from sealcheck.harness.run import runner
    from sealcheck.report import report as report_module

    run_dir = stored_run(tmp_path)

    def broken(path: Path) -> Path:
        raise ValueError("an observed upper is not a number")

    monkeypatch.setattr(report_module, "write_report", broken)
    shown = SimpleNamespace(update=lambda **kw: None)
    valid = runner._judge(run_dir, SimpleNamespace(checkers=()), shown)  # type: ignore[arg-type]
    page = (run_dir / "report.html").read_text()
    assert valid is True and "VALID" in page
    assert "the full report could not be drawn (ValueError: an observed upper" in page
