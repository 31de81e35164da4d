"""Test configs: TOML plus flags, and one clear line for every kind of bad value."""

from __future__ import annotations

from pathlib import Path

import pytest

from sealcheck.harness.cli.app import main
from sealcheck.harness.run.config import (
    ConfigError,
    TestConfig,
    build_config,
    from_json,
    load_config,
)
from sealcheck.harness.run.test import build_test, load_test


def load(path: Path | None = None, **over: object) -> TestConfig:
    """The config of a file and flags, as ``sealcheck run`` takes it: built and validated."""
    return load_test(path, dict(over)).spec


def checked(raw: dict[str, object]) -> TestConfig:
    """``raw`` (a saved config's shape), built and validated."""
    cfg = build_config(raw)
    build_test(cfg).validate()
    return cfg


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
        ({"spark": "yarn"}, "spark='yarn': use connect or local"),
        ({"hold_steps": -1}, "hold_steps=-1: 0"),
        ({"system_options.compact_every": 0}, "compact_every=0: at least 1"),
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


def test_the_reproduce_line_gives_back_every_setting() -> None:
    import dataclasses
    import shlex

    from sealcheck.harness.cli.app import build_parser
    from sealcheck.harness.cli.run import _overrides
    from sealcheck.harness.run.config import WorkloadConfig
    from sealcheck.harness.run.flags import settings, to_flags
    from sealcheck.harness.run.runner import repro_command

    # Every setting away from its default (so none can hide behind one).
    cfg = TestConfig(
        name="repro",
        seed=77,
        backend="containers",
        spark="local",
        brokers=3,
        partitions=5,
        duration_s=33.5,
        nemeses=("kill", "pause"),
        nemesis_interval_s=4.25,
        final_timeout_s=99.0,
        max_records_per_step=321,
        system_options={"retain_steps": 7, "compact_every": 3, "hold_steps": 11},
        broken="reappend-after-restart",
        checkers=("diff_of_one", "sealed_state"),
        runs_dir="elsewhere",
        workload=WorkloadConfig(
            keys=17,
            distribution="zipf",
            zipf_s=1.3,
            tombstone_ratio=0.1,
            bad_ratio=0.03,
            value_size=9,
            rate=55.5,
            concurrency=3,
            sample="prod.jsonl",
            sample_sha256="ab" * 32,
        ),
    )
    defaults = dict(settings(TestConfig()))
    # (one system under test is registered, so ``system`` can only be spelled out)
    # (the system's options have no defaults among the settings: they are its own)
    kept = [k for k, v in settings(cfg) if v == defaults.get(k) and k != "system"]
    assert not kept, f"settings kept their defaults: {kept}"
    line = repro_command(cfg, Path("store/x"))[0]
    assert "--system upsert-source" in line
    assert shlex.split(line)[:2] == ["sealcheck", "run"]
    args = build_parser().parse_args(shlex.split(line)[1:])
    assert load_config(None, _overrides(args)) == cfg
    assert to_flags(dataclasses.replace(cfg, broken=None)).count("--broken") == 0


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["run", "--duration", "inf"], "duration_s=inf: expected a finite number"),
        (["run", "--rate", "nan"], "workload.rate=nan: expected a finite number"),
        (["run", "--duration", "1e9"], "at most 604800 (a week)"),
        (["run", "--set", "workload=5"], "workload=5: expected a table of settings"),
        (["run", "--set", "retain_steps"], "expected name=value"),
        (["run", "--set", "durration_s=4"], "unknown setting(s) ['durration_s']"),
        (["run", "--set", "duration_s=5", "--duration", "4"], "duration_s is already given"),
    ],
)
def test_bad_run_flags_are_one_line_and_254(
    argv: list[str], fragment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 254
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and fragment in err[0], err


def test_a_config_file_whose_workload_is_not_a_table(tmp_path: Path) -> None:
    f = tmp_path / "t.toml"
    f.write_text("workload = 5\n")
    with pytest.raises(ConfigError, match="workload=5: expected a table of settings"):
        load(f)


def _saved(tmp_path: Path, config: object, schedule: object) -> Path:
    import json

    run = tmp_path / "run"
    run.mkdir(exist_ok=True)
    (run / "test.json").write_text(json.dumps({"config": config, "schedule": schedule}))
    return run


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        (["--duration", "5"], "so --duration cannot be given with it"),
        (["--config", "x.toml"], "so --config cannot be given with it"),
        (["--set", "retain_steps=1"], "so --set retain_steps cannot be given with it"),
    ],
)
def test_replay_refuses_flags_that_would_change_the_run(
    tmp_path: Path, extra: list[str], fragment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _saved(tmp_path, TestConfig().to_json(), [])
    assert main(["run", "--replay", str(run), *extra]) == 254
    assert fragment in capsys.readouterr().err


@pytest.mark.parametrize(
    ("config", "schedule", "fragment"),
    [
        ({"workload": 5}, [], "saved workload=5: expected a table"),
        ({"brokers": 2}, [], "saved brokers=2: use 1 or 3"),
        ({}, [{"at_s": 1}], "schedule entry 0 {'at_s': 1} is not an action"),
        ({}, [{"at_s": 1, "nemesis": "zap", "f": "x", "value": {}}], "names nemesis 'zap'"),
        ({}, [{"at_s": 1e9, "nemesis": "kill", "f": "x", "value": {}}], "times within 0..99s"),
    ],
)
def test_replay_checks_the_saved_config_and_schedule(
    tmp_path: Path,
    config: object,
    schedule: object,
    fragment: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    run = _saved(tmp_path, config, schedule)
    assert main(["run", "--replay", str(run)]) == 254
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and fragment in err[0], err
    assert main(["run", "--replay", str(tmp_path / "nope")]) == 254
    assert "test.json does not exist" in capsys.readouterr().err


def test_spark_connect_server_command_binds_where_asked() -> None:
    from sealcheck_upsert_source.spark import connect_server_command

    argv = connect_server_command("/jars", 15002, host="0.0.0.0", spark_submit="/x/spark-submit")
    assert argv[0] == "/x/spark-submit" and argv[-1] == "spark-internal"
    assert "org.apache.spark.sql.connect.service.SparkConnectServer" in argv
    confs = {argv[i + 1] for i, a in enumerate(argv) if a == "--conf"}
    assert {
        "spark.connect.grpc.binding.port=15002",
        "spark.connect.grpc.binding.address=0.0.0.0",
        "spark.driver.extraClassPath=/jars/*",
    } <= confs


def test_the_default_mix_leaves_out_what_the_backend_cannot_host() -> None:
    assert "lost-writes" in build_config({}).nemeses  # the local backend's lazy disk
    on_containers = build_config({"backend": "containers"}).nemeses
    assert "lost-writes" not in on_containers and on_containers.count("failpoint") == 4
    with pytest.raises(ConfigError, match=r"lost-writes.*use --backend local"):
        checked({"backend": "containers", "nemeses": ["lost-writes"]})
    with pytest.raises(ConfigError, match=r"lost-writes-kafka.*brokers' log.*use --backend local"):
        checked({"backend": "containers", "nemeses": ["lost-writes-kafka"]})
    assert checked({"nemeses": ["lost-writes-kafka"]}).nemeses == ("lost-writes-kafka",)
    with pytest.raises(ConfigError, match=r"lose-commit-reply.*use --backend containers"):
        checked({"nemeses": ["lose-commit-reply"]})


def test_the_upsert_sources_compaction_settings_are_its_options_old_spellings_read() -> None:
    """``retain_steps``, ``compact_every``, ``hold_steps`` belong to the upsert source alone:
    its options (``system_options.*``). The old top-level spelling is read — on the command
    line and in a stored run's config — and given to another system is one line; a stored
    run of another system, which carried them too, drops them."""
    assert load(**{"system_options.retain_steps": 0}).system_options == {"retain_steps": 0}
    assert load(retain_steps=0).system_options == {"retain_steps": 0}
    stored = {**TestConfig().to_json(), "retain_steps": 3, "compact_every": 2, "hold_steps": 20}
    replayed = build_config(stored, stored=True)
    assert replayed.system_options == {"retain_steps": 3, "compact_every": 2, "hold_steps": 20}
    job = {**stored, "system": "delta-streaming"}
    assert build_config(job, stored=True).system_options == {}
    with pytest.raises(ConfigError) as info:
        build_config({**TestConfig().to_json(), "system": "delta-streaming", "retain_steps": 3})
    assert str(info.value) == (
        "retain_steps=3 is a setting of the upsert-source system, not of delta-streaming: "
        "leave it out"
    )
