import pytest

from sealcheck.harness.cli import app as cli


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


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.startswith("sealcheck ")


def test_serve_refuses_a_missing_store_and_a_busy_port(
    tmp_path: object, capsys: pytest.CaptureFixture[str]
) -> None:
    import socket
    from pathlib import Path

    assert cli.main(["serve", "--runs", "/nonexistent"]) == cli.EXIT_BAD_ARGS
    assert "/nonexistent is not a directory" in capsys.readouterr().err
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        code = cli.main(["serve", "--runs", str(Path(str(tmp_path))), "--port", str(port)])
    err = capsys.readouterr().err
    assert code == cli.EXIT_BAD_ARGS and f"cannot listen on 127.0.0.1:{port}" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_check_refuses_an_unknown_checker_before_loading_anything(
    tmp_path: object, capsys: pytest.CaptureFixture[str]
) -> None:
    # The directory does not even exist: the checker name is refused first.
    assert cli.main(["check", "/nonexistent/run", "--checker", "bogus"]) == cli.EXIT_BAD_ARGS
    assert "unknown checker 'bogus'" in capsys.readouterr().err
