"""A file that is not a history says so in one line naming it (issue 48): ``history.jsonl`` of
random bytes used to say Polars' "CSV file contained column names … pass
`extra_columns='ignore'`", a blank line ended in a ``TypeError``.

Each case is read by the one reader (:meth:`History.load`: a :class:`HistoryError`, or an
unusable history, naming the file) and judged by ``sealcheck check``: UNKNOWN (exit 2), the
history's line first, no traceback."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from sealcheck.harness.cli import app as cli
from sealcheck.rundir.history import History, HistoryError
from tests.runs import stored_run

NOT_A_HISTORY = "is not a Sealcheck history: line 1 is not a JSON op ("
RESTORE = "restore it from the run, or re-run the test"

CASES: dict[str, tuple[bytes, str]] = {
    "random bytes": (random.Random(48).randbytes(64 << 10), NOT_A_HISTORY),
    "binary with NULs": (bytes(range(256)) * 64 + b"\n\0\0\n", NOT_A_HISTORY),
    "a NUL in the middle of a line": (b'{"index": 0\0}\n', NOT_A_HISTORY + "a NUL byte"),
    "text that is not UTF-8": (b'{"index":0,"f":"caf\xe9"}\n', NOT_A_HISTORY + "bytes that"),
    "a JSON document": (
        json.dumps({"config": {"seed": 1}, "schedule": []}, indent=1).encode(),
        NOT_A_HISTORY + "Expecting property name",
    ),
    "a JSON object that is not an op": (b'{"seed": 1}\n', NOT_A_HISTORY + "an object with no"),
    "a JSON list": (b"[1, 2, 3]\n", NOT_A_HISTORY + "a JSON list"),
    "a blank first line": (b"\n\n", NOT_A_HISTORY + "an empty line"),
    "UTF-16 text": ('{"index": 0}\n'.encode("utf-16"), NOT_A_HISTORY),
}


@pytest.mark.parametrize("case", CASES)
def test_a_file_that_is_not_a_history_is_named_by_the_reader(tmp_path: Path, case: str) -> None:
    data, said = CASES[case]
    path = tmp_path / "history.jsonl"
    path.write_bytes(data)
    with pytest.raises(HistoryError) as err:
        History.load(path)
    line = str(err.value)
    assert line.startswith(f"{path} {said}") and line.endswith(RESTORE), line
    assert "\n" not in line and "extra_columns" not in line


@pytest.mark.parametrize("case", [*CASES, "an empty file", "no newline at all"])
def test_sealcheck_check_says_which_file_is_not_a_history_and_exits_unknown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    run_dir = stored_run(tmp_path, run_id="r")  # judged without it: every file is the run's
    path = run_dir / "history.jsonl"
    data = {"an empty file": b"", "no newline at all": b"\x89PNG\r"}.get(case)
    path.write_bytes(CASES[case][0] if data is None else data)
    assert cli.main(["check", str(run_dir)]) == cli.EXIT_UNKNOWN
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err and err == "", out + err
    [problem] = [x for x in out.splitlines() if x.startswith("  input problem: ")]
    assert f"no usable history ({path} " in problem, problem
    said = {"an empty file": "is empty", "no newline at all": "it holds no complete line"}
    assert said.get(case, NOT_A_HISTORY) in problem
    assert not any(": invalid" in x for x in out.splitlines()), out


def test_a_bad_line_later_in_a_history_is_named_by_its_number(tmp_path: Path) -> None:
    run_dir = stored_run(tmp_path, ack_lines=True, run_id="r")
    path = run_dir / "history.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    for bad, said in (
        (b"\n", "line 4: not a JSON op (an empty line)"),
        (b'{"index": 3, "x": "\0"}\n', "line 4: not a JSON op (a NUL byte at column 20)"),
        (b'{"index": 3, "x": "\xff"}\n', "line 4: not a JSON op (bytes that are not UTF-8"),
    ):
        path.write_bytes(b"".join([*lines[:3], bad, *lines[4:]]))
        with pytest.raises(HistoryError) as err:
            History.load(path)
        assert str(err.value).startswith(f"{path} {said}") and str(err.value).endswith(RESTORE)


def test_bytes_that_are_not_text_after_the_final_op_are_a_file_changed_after_the_run(
    tmp_path: Path,
) -> None:
    path = stored_run(tmp_path, run_id="r") / "history.jsonl"
    with open(path, "ab") as fh:
        fh.write(b"\0\xff\0\n")
    history = History.load(path)
    assert history.final() is not None and history.after_final == 4
    assert "4 bytes after the final op: the file changed after the run ended" in str(
        history.problems()
    )


def test_crlf_line_ends_read_as_the_same_history(tmp_path: Path) -> None:
    path = stored_run(tmp_path, ack_lines=True, run_id="r") / "history.jsonl"
    before = History.load(path)
    ops, acked = before.ops, before.collect(before.acked.lazy())
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    after = History.load(path)
    assert after.ops == ops and after.problems() == []
    assert after.collect(after.acked.lazy()).equals(acked)
