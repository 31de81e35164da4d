"""The pytest plugin's mechanics, through pytester with a stand-in for the chaos run (the real
runs are in tests/integration/test_pytest_example.py): the marker's cases, the seeds option,
the failure message, the JUnit properties, the errors for bad use, and reading a run back."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from sealcheck.harness.campaigns.child_run import ConfigError, command, config_for
from sealcheck.harness.campaigns.verdicts import read_result
from sealcheck_pytest.runner import run_name

pytest_plugins = ["pytester"]

STAND_IN = '''
import pytest
import sealcheck_pytest.plugin as plugin
from sealcheck.harness.campaigns.verdicts import AnomalySummary, ChaosResult


class Broker:
    """The session's broker, not started: its address is all a run is offered."""

    bootstrap = "127.0.0.1:9"


@pytest.fixture(scope="session")
def sealcheck_kafka():
    return Broker()


@pytest.fixture(autouse=True)
def stand_in(monkeypatch, tmp_path):
    """A run that is INVALID exactly when a broken mode is asked for; the broker each run is
    offered is appended to offers.txt."""

    def fake(store, name, seed, nemeses, options, timeout_s, kafka=""):
        with open("offers.txt", "a") as fh:
            fh.write(f"{name} {options.get('backend')} {kafka or '-'}\\n")
        broken = options.get("broken")
        bad = AnomalySummary("unique_key", "key-with-two-values", "k7", 4, "batch 4: data v9")
        return ChaosResult(
            "INVALID" if broken else "VALID",
            tmp_path / name,
            seed,
            1 if broken else 0,
            failing_checkers=("unique_key",) if broken else (),
            anomalies=(bad,) if broken else (),
            reproduce=(f"sealcheck run --seed {seed} --nemesis {','.join(nemeses or [])}",),
            unplanned="no fault planned for pause: …" if options.get("duration") == 6 else "",
        )

    monkeypatch.setattr(plugin, "run_chaos", fake)
'''


def test_the_marker_makes_one_case_per_seed_and_nemesis_set(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(STAND_IN)
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.sealcheck(seeds=[1, 2], nemeses=[["kill"], ["pause", "zombie"]])
        def test_job(sealcheck, sealcheck_case):
            result = sealcheck("upsert-source")
            assert result.seed == sealcheck_case.seed
            result.assert_valid()
        """
    )
    res = pytester.runpytest("-v")
    res.assert_outcomes(passed=4)
    res.stdout.fnmatch_lines(["*test_job?seed1-kill?*PASSED*", "*test_job?seed2-pause+zombie?*"])


def test_the_seeds_option_overrides_every_marker(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(STAND_IN)
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.sealcheck(seeds=[1])
        def test_job(sealcheck):
            sealcheck("upsert-source").assert_valid()
        """
    )
    pytester.runpytest("--sealcheck-seeds", "5-7,9").assert_outcomes(passed=4)


def test_a_failing_run_prints_anomalies_report_and_reproduce(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(STAND_IN)
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.sealcheck(seeds=[3], nemeses=[["kill"]])
        def test_job(sealcheck):
            sealcheck("upsert-source", broken="reappend-after-restart").assert_valid()
        """
    )
    res = pytester.runpytest()
    res.assert_outcomes(failed=1)
    res.stdout.fnmatch_lines(
        [
            "*sealcheck verdict: INVALID (seed 3)*",
            "*failing checkers: unique_key*",
            "*unique_key: key-with-two-values at step 4 (batch 4: data v9) key k7*",
            "*report: *report.html*",
            "*reproduce: sealcheck run --seed 3 --nemesis kill*",
        ]
    )


def test_junit_xml_carries_seed_verdict_report_and_reproduce(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(STAND_IN)
    pytester.makepyfile(
        """
        def test_job(sealcheck):
            sealcheck("upsert-source", seed=11).assert_valid()
        """
    )
    xml = pytester.path / "out.xml"
    res = pytester.runpytest(f"--junitxml={xml}")
    res.assert_outcomes(passed=1)  # xunit2 (the default) has no per-test properties: no warning
    res.stdout.no_fnmatch_line("*incompatible with junit_family*")
    suite = ET.parse(xml).find(".//testsuite/properties")
    assert suite is not None
    test = "test_junit_xml_carries_seed_verdict_report_and_reproduce.py::test_job"
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props[f"{test}::sealcheck_seed"] == "11"
    assert props[f"{test}::sealcheck_verdict"] == "VALID"
    assert props[f"{test}::sealcheck_report"].endswith("report.html")
    assert props[f"{test}::sealcheck_reproduce"].startswith("sealcheck run --seed 11")


@pytest.mark.parametrize(
    ("mark", "args", "said"),
    [
        ("@pytest.mark.sealcheck(seed=[1])", (), "takes seeds=[...] and nemeses="),
        ("@pytest.mark.sealcheck(seeds=[1])", ("--sealcheck-seeds", "x"), "is not a seed"),
        ("@pytest.mark.sealcheck(seeds=[1])", ("--sealcheck-seeds", "5-2"), "empty range"),
    ],
)
def test_bad_use_is_one_clear_line(
    pytester: pytest.Pytester, mark: str, args: tuple[str, ...], said: str
) -> None:
    pytester.makeconftest(STAND_IN)
    pytester.makepyfile(f"import pytest\n\n{mark}\ndef test_job(sealcheck):\n    pass\n")
    res = pytester.runpytest(*args)
    assert res.ret != 0
    assert said in res.stdout.str() + res.stderr.str()


def test_the_command_spells_flags_and_settings() -> None:
    cfg = config_for(
        Path("/runs"),
        "t",
        4,
        ["kill", "pause"],
        {"system": "upsert-source", "duration": 15, "final_timeout_s": 90, "workload.keys": 300},
    )
    text = " ".join(command(cfg)[1:])
    assert text.startswith("-m sealcheck run --no-progress ")
    for spelled in ("--name t", "--seed 4", "--nemesis kill,pause", "--runs /runs"):
        assert spelled in text, text
    for spelled in (
        "--system upsert-source",
        "--duration 15.0",
        "--final-timeout 90.0",
        "--keys 300",
    ):
        assert spelled in text, text
    with pytest.raises(ConfigError, match=r"workload\.tag|tag"):  # refused before anything runs
        config_for(Path("/runs"), "t", 4, None, {"workload.tag": 'a"b'})


def test_a_run_that_was_not_judged_is_unknown_never_valid(tmp_path: Path) -> None:
    res = read_result(tmp_path, 1, 255, "Traceback ...\nboom")
    assert res.verdict == "UNKNOWN"
    assert "not judged (harness exit 255)" in res.summary() and "boom" in res.summary()


def test_results_are_read_as_the_report_shows_them(tmp_path: Path) -> None:
    anomaly = {"kind": "state-mismatch", "key": "k1", "step": 2, "context": {"batch": "batch 2"}}
    results = {
        "valid": False,
        "inputs": {"problems": []},
        "checkers": {
            "sealed_state": {"valid": False, "anomalies": [anomaly]},
            "unique_key": {"valid": True, "anomalies": []},
        },
    }
    (tmp_path / "results.json").write_text(json.dumps(results))
    (tmp_path / "test.json").write_text(json.dumps({"reproduce": ["sealcheck run --seed 2"]}))
    res = read_result(tmp_path, 2, 1, "")
    assert (res.verdict, res.failing_checkers, res.reproduce) == (
        "INVALID",
        ("sealed_state",),
        ("sealcheck run --seed 2",),
    )
    assert res.anomalies[0].line() == "sealed_state: state-mismatch at step 2 (batch 2) key k1"
    # an output without bindings: its step is a state of the harness's, its batch named, and
    # the checker's explanation follows
    told = {**anomaly, "context": {"batch": "batch 190 committed"}, "detail": "k5 shows …"}
    sql = {
        **results,
        "checkers": {"prefix": {"valid": False, "anomalies": [{**told, "kind": "no-prefix"}]}},
        "facts": {"bindings_kept": False},
    }
    (tmp_path / "results.json").write_text(json.dumps(sql))
    assert read_result(tmp_path, 2, 1, "").anomalies[0].line() == (
        "prefix: no-prefix at state 2 (batch 190 committed) key k1: k5 shows …"
    )
    unknown = {**results, "valid": "unknown", "inputs": {"problems": ["history cut short"]}}
    (tmp_path / "results.json").write_text(json.dumps(unknown))
    assert read_result(tmp_path, 2, 2, "").verdict == "UNKNOWN"


def test_a_long_parametrised_test_gets_a_run_name_the_harness_accepts() -> None:
    nodeid = "tests/test_x.py::test_" + "very_long_name_" * 6 + "[seed12-kill+pause+zombie]"
    name = run_name(nodeid) + "-3"  # the third run of the same test
    assert config_for(Path("/runs"), name, 1, None, {}).name == name


def test_a_nemesis_asked_for_and_never_played_is_a_warning(pytester: pytest.Pytester) -> None:
    """The test passes (the run was VALID), and pytest's summary says which nemesis its run
    gave no fault."""
    pytester.makeconftest(STAND_IN)
    pytester.makepyfile(
        """
        def test_job(sealcheck):
            sealcheck("upsert-source", nemeses=["kill", "pause"], duration=6).assert_valid()

        def test_long_enough(sealcheck):
            sealcheck("upsert-source", nemeses=["kill", "pause"], duration=60).assert_valid()
        """
    )
    res = pytester.runpytest("-rw")
    res.assert_outcomes(passed=2)
    res.stdout.fnmatch_lines(["*::test_job", "*NemesisNotPlayed*no fault planned for pause*"])
    assert res.stdout.str().count("NemesisNotPlayed") == 1  # not for the long enough one


def test_local_runs_are_offered_the_sessions_broker(pytester: pytest.Pytester) -> None:
    # a local run is offered the session's broker (it borrows it unless its faults act on
    # brokers: tests/integration/test_shared_kafka.py); a run in containers is not, and with
    # --sealcheck-own-kafka none is
    pytester.makeconftest(STAND_IN)
    pytester.makepyfile(
        """
        def test_local(sealcheck):
            sealcheck("upsert-source")

        def test_in_containers(sealcheck):
            sealcheck("upsert-source", backend="containers")
        """
    )
    pytester.runpytest().assert_outcomes(passed=2)
    offers = (pytester.path / "offers.txt").read_text().splitlines()
    assert offers == ["test_local None 127.0.0.1:9", "test_in_containers containers -"]
    (pytester.path / "offers.txt").unlink()
    pytester.runpytest("--sealcheck-own-kafka").assert_outcomes(passed=2)
    offers = (pytester.path / "offers.txt").read_text().splitlines()
    assert offers == ["test_local None -", "test_in_containers containers -"]
