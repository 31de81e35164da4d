"""One exit-code table and one ``positive`` argument type for every ``sealcheck`` command."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from sealcheck.harness.campaigns import commands
from sealcheck.harness.cli import app
from sealcheck.harness.cli import run as cli_run

HARNESS = Path(__file__).resolve().parents[2] / "harness"


def test_every_exit_code_has_one_meaning_in_one_table() -> None:
    named = {k: v for k, v in vars(commands).items() if k.startswith("EXIT_") and k != "EXIT_CODES"}
    assert sorted(named.values()) == sorted(commands.EXIT_CODES)  # each code once, each named
    assert commands.VERDICT_EXIT == {True: 0, False: 1, None: 2}
    for name, code in named.items():  # the CLI speaks the same table
        assert getattr(app, name) == code, name
    assert cli_run.VERDICT_EXIT is commands.VERDICT_EXIT
    assert commands.exit_help(0, 254) == "0 valid, 254 bad arguments"


def test_no_module_keeps_an_exit_table_or_an_argument_type_of_its_own() -> None:
    table = re.compile(r"^(EXIT_[A-Z_]+|VERDICT_EXIT|_EXIT_OF)\s*(:[^=]*)?=", re.M)
    positive = re.compile(r"^\s*def _?positive\(", re.M)
    for path in HARNESS.rglob("*.py"):
        if path.name == "commands.py":
            continue
        text = path.read_text()
        assert not table.search(text), f"{path}: an exit-code table of its own"
        assert not positive.search(text), f"{path}: a copy of commands.positive"


def test_the_run_help_states_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        app.main(["run", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert commands.exit_help() in out


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["selftest", "--seeds", "0"], "0 must be at least 1"),
        (["shrink", "x", "--max-runs", "many"], "'many' is not a whole number"),
        (["demo", "--partitions", "-3"], "-3 must be at least 1"),
    ],
)
def test_every_command_refuses_a_count_below_one_alike(
    argv: list[str], fragment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        app.main(argv)
    assert exc.value.code == commands.EXIT_BAD_ARGS
    assert fragment in capsys.readouterr().err


def test_positive() -> None:
    assert commands.positive("7") == 7
    for bad in ("0", "-1", "x", "1.5"):
        with pytest.raises(argparse.ArgumentTypeError, match=r"whole number|at least 1"):
            commands.positive(bad)
