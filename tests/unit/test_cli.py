import pytest

from harness import cli


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["demo", "--records", "x"], "'x' is not a whole number"),
        (["demo", "--records", "0"], "must be at least 1"),
        (["demo", "--backend", "cloud"], "invalid choice: 'cloud'"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
    ],
)
def test_bad_arguments_exit_254_with_one_clear_line(
    argv: list[str], fragment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == cli.EXIT_BAD_ARGS
    err = capsys.readouterr().err
    assert fragment in err
    assert "Traceback" not in err


def test_missing_jars_is_one_line_not_a_traceback(
    tmp_path: object, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SEALCHECK_CACHE", str(tmp_path))
    code = cli.main(["demo", "--records", "10"])
    err = capsys.readouterr().err
    assert code == cli.EXIT_BAD_ARGS
    assert "sealcheck setup" in err
    assert "Traceback" not in err
