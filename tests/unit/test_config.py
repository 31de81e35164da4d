"""Test configs: TOML plus flags, and one clear line for every kind of bad value."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import main
from harness.config import ConfigError, TestConfig, from_json, load_config

NEMESES = ("kill", "failpoint", "pause", "kill-kafka")
BROKEN = ("reappend-after-restart",)


def load(path: Path | None = None, **over: object) -> TestConfig:
    return load_config(path, dict(over), NEMESES, BROKEN)


def test_toml_then_flags(tmp_path: Path) -> None:
    f = tmp_path / "t.toml"
    f.write_text('name = "nightly"\nseed = 9\nnemeses = ["kill"]\n[workload]\nrate = 50\n')
    cfg = load(f, seed=10, **{"workload.keys": 10})
    assert (cfg.name, cfg.seed, cfg.nemeses) == ("nightly", 10, ("kill",))
    assert (cfg.workload.rate, cfg.workload.keys) == (50.0, 10)
    assert from_json(cfg.to_json()) == cfg


@pytest.mark.parametrize(
    ("over", "fragment"),
    [
        ({"brokers": 2}, "brokers=2: use 1 or 3"),
        ({"nemeses": ("kill", "explode")}, "nemesis 'explode' is unknown"),
        ({"duration_s": -1.0}, "duration_s=-1.0: must be positive"),
        ({"workload.rate": 0.0}, "workload.rate=0.0"),
        ({"workload.distribution": "pareto"}, "workload.distribution='pareto'"),
        ({"workload.tombstone_ratio": 0.9, "workload.bad_ratio": 0.5}, "exceeds 1"),
        ({"broken": "sometimes"}, "broken='sometimes'"),
        ({"name": "a b"}, "name='a b'"),
        ({"seed": "x"}, "seed='x': expected a whole number"),
    ],
)
def test_bad_values_are_named(over: dict[str, object], fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment.replace("(", "\\(").replace("[", "\\[")):
        load(**over)


def test_unknown_settings_and_bad_files(tmp_path: Path) -> None:
    f = tmp_path / "t.toml"
    f.write_text("durration_s = 5\n")
    with pytest.raises(ConfigError, match="unknown setting\\(s\\) \\['durration_s'\\]"):
        load(f)
    f.write_text("name = \n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load(f)
    with pytest.raises(ConfigError, match="does not exist"):
        load(tmp_path / "missing.toml")


def test_cli_bad_config_is_one_line_and_254(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--brokers", "2"]) == 254
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["sealcheck run: brokers=2: use 1 or 3"]
    assert main(["run", "--nemesis", "kill,zap"]) == 254
    assert "nemesis 'zap' is unknown" in capsys.readouterr().err
