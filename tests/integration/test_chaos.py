"""End to end: `sealcheck run` on real Kafka and the real Spark pipeline, with faults.

* kill, failpoint and pause on the correct pipeline: valid; every planned fault has an
  outcome in the history, and what it claims is what the pipeline's exits show (a SIGKILLed
  incarnation, a failpoint that fired — or, when it did not fire in time, the kill that
  replaced it — a process the kernel reported stopped); everything was healed (the pipeline
  caught up with the log end, nothing is left running);
* the same faults on a deliberately broken pipeline: invalid, with the right anomaly;
* the report renders in headless Chromium with the verdict on the page.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sealcheck.checkers import check_run
from sealcheck.harness.run.config import from_json
from sealcheck.harness.run.test import build_test
from sealcheck.infra import cleanup
from sealcheck.rundir.coverage import outcomes
from sealcheck.rundir.history import History
from tests.cli_runs import ROOT, ops, sealcheck_run

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def valid_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, str, Path]:
    store = tmp_path_factory.mktemp("store")
    return sealcheck_run(
        store,
        "--name",
        "e2e",
        "--seed",
        "3",
        "--duration",
        "40",
        "--interval",
        "6",
        "--nemesis",
        "kill,failpoint,pause",
        "--rate",
        "300",
    )


def test_faults_on_the_correct_pipeline_are_valid(valid_run: tuple[int, str, Path]) -> None:
    code, out, run_dir = valid_run
    assert code == 0, out[-3000:]
    assert "verdict: VALID" in out and str(run_dir / "report.html") in out
    results = json.loads((run_dir / "results.json").read_text())
    assert results["valid"] is True
    # every sealed step judged one by one, also those compaction merged (through captures)
    counts = results["checkers"]["sealed_state"]["counts"]
    for c in ("data", "errors"):
        assert counts[f"{c}_steps_judged"] == counts[f"{c}_steps_sealed"] > 0, counts
    judged = ", ".join(
        f"{c} {counts[f'{c}_steps_judged']}/{counts[f'{c}_steps_sealed']}"
        for c in ("data", "errors")
    )
    assert f"Sealed steps judged one by one / sealed: {judged}." in out
    final = History.load(run_dir / "history.jsonl").final()
    assert final is not None and "captures.arrows" in final["value"]["files"]
    for name in (
        "test.json",
        "history.jsonl",
        "topic.parquet",
        "export/store.db",
        "report.html",
        "logs/kafka-1.log",
        "logs/sut-0.log",
    ):
        assert (run_dir / name).exists(), name


def test_each_fault_happened_and_was_healed(valid_run: tuple[int, str, Path]) -> None:
    _, out, run_dir = valid_run
    history = ops(run_dir)
    planned = json.loads((run_dir / "test.json").read_text())["schedule"]
    final = outcomes(history)
    assert sorted(final) == list(range(len(planned)))  # every planned fault says what happened
    exits = [o["value"] for o in history if o["f"] == "sut-exit"]
    sigkilled = {e["pid"] for e in exits if e["code"] == -9}
    fired = {e["failpoint"] for e in exits if e["failpoint"]}
    effects: dict[str, set[str]] = {}
    for i, action in enumerate(planned):
        done = final[i]
        effects.setdefault(action["nemesis"], set()).add(done["outcome"])
        if done["outcome"] == "skipped":
            assert done["why"], done
        elif action["f"] == "kill-sut" or done["outcome"] == "replaced-by-kill":
            assert done["killed"] in sigkilled, (done, exits)
        elif action["f"] == "arm-failpoint":
            assert done["outcome"] == "happened" and done["fired"] in fired, (done, exits)
        elif action["f"] == "pause-sut":
            assert isinstance(done["paused"], int)  # the kernel said "stopped"
    # The harness guarantees each kind of fault took effect: a kill waits for a running
    # incarnation, and a failpoint that did not fire in time is replaced by a kill.
    assert "happened" in effects["kill"] and "happened" in effects["pause"], effects
    assert effects["failpoint"] & {"happened", "replaced-by-kill"}, effects
    assert any(o["f"] == "heal" for o in history)
    assert any(o["f"] == "caught-up" for o in history), out[-2000:]
    assert exits[-1]["code"] == 0  # stopped cleanly at the end
    assert not [p for p in cleanup.leftovers() if p.run == str(run_dir)]
    alive = subprocess.run(["pgrep", "-f", str(run_dir)], capture_output=True, text=True)
    assert alive.stdout.strip() == ""


def test_every_input_carries_the_run_s_id_and_proves_it_without_the_manifest(
    valid_run: tuple[int, str, Path], tmp_path: Path
) -> None:
    """The run id test.json records is the history's first op and stamped into every input
    a checker reads; a copy of the run with its history cut before the final op is still
    judged (its own files), never VALID, and with a test.json of another run, not at all."""
    import shutil

    from sealcheck.rundir.runid import RUN_OP, file_run_id

    run_dir = valid_run[2]
    made = json.loads((run_dir / "test.json").read_text())["run_id"]
    first = ops(run_dir)[0]
    assert (first["index"], first["f"], first["value"]) == (0, RUN_OP, {"id": made})
    final = History.load(run_dir / "history.jsonl").final()
    assert final is not None
    inputs = [r for r in final["value"]["files"] if r.endswith((".parquet", ".arrows", ".json"))]
    wanted = {"topic.parquet", "acks.arrows", "captures.arrows", "export/updates.parquet"}
    assert wanted | {"export/frontiers.json"} <= set(inputs), inputs
    for rel in inputs:
        assert file_run_id(run_dir / rel, run_dir) == made, rel
    copy = tmp_path / "copy"
    shutil.copytree(run_dir, copy, ignore=shutil.ignore_patterns("work", "logs"))
    history = copy / "history.jsonl"
    history.write_text("".join(history.read_text().splitlines(keepends=True)[:-1]))
    res = check_run(copy)
    assert res.valid is None and res.checkers and len(res.input_problems) == 1, res.to_json()
    assert not [n for n, r in res.checkers.items() if r.valid is False], res.to_json()
    (copy / "test.json").write_text(json.dumps({"run_id": "another run"}))
    res = check_run(copy)
    assert res.valid is None and res.checkers == {}, res.to_json()


def test_the_schedule_is_the_one_planned_from_the_seed(valid_run: tuple[int, str, Path]) -> None:
    meta = json.loads((valid_run[2] / "test.json").read_text())
    planned = build_test(from_json(meta["config"])).schedule
    assert [a.to_json() for a in planned] == meta["schedule"]
    assert any("--seed 3" in c for c in meta["reproduce"])


def _in_chromium(report: Path, tmp_path: Path) -> tuple[str, Any]:
    """The DOM chromium builds from ``report`` and its screenshot (1280 x 1600, RGB)."""
    from PIL import Image

    browser = subprocess.run(
        ["bash", str(ROOT / "scripts" / "chromium.sh")], capture_output=True, text=True
    )
    assert browser.returncode == 0, browser.stderr
    chromium = browser.stdout.strip().splitlines()[-1]
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"]
    shot = tmp_path / "sealcheck.report.png"
    subprocess.run(
        [chromium, *flags, "--window-size=1280,1600", f"--screenshot={shot}", report.as_uri()],
        capture_output=True,
        timeout=120,
        check=True,
    )
    dom = subprocess.run(
        [chromium, *flags, "--dump-dom", report.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    return dom, Image.open(shot).convert("RGB")


def _pixels_near(image: Any, hex_color: str, tolerance: int = 24) -> int:
    """How many pixels of ``image`` are within ``tolerance`` of ``hex_color`` per channel."""
    want = tuple(int(hex_color[i : i + 2], 16) for i in (1, 3, 5))
    return sum(
        n
        for n, rgb in image.getcolors(maxcolors=1 << 22) or []
        if all(abs(a - b) <= tolerance for a, b in zip(rgb, want, strict=True))
    )


def test_the_report_renders_in_headless_chromium(
    valid_run: tuple[int, str, Path], tmp_path: Path
) -> None:
    dom, image = _in_chromium(valid_run[2] / "report.html", tmp_path)
    assert 'id="verdict"' in dom and ">VALID<" in dom and 'id="legend"' in dom
    lo, hi = image.convert("L").getextrema()
    assert hi - lo > 100  # not blank: dark text and the green banner on white
    assert len(image.getcolors(maxcolors=1 << 20) or []) > 50
    assert _pixels_near(image, "#1a7f37") > 5000  # the VALID banner is on screen


def test_a_broken_pipeline_is_caught(tmp_path: Path) -> None:
    code, out, run_dir = sealcheck_run(
        tmp_path,
        "--name",
        "broken",
        "--seed",
        "5",
        "--duration",
        "24",
        "--interval",
        "8",
        "--nemesis",
        "kill",
        "--rate",
        "300",
        "--broken",
        "reappend-after-restart",
    )
    assert code == 1, out[-3000:]
    assert "verdict: INVALID" in out
    results = json.loads((run_dir / "results.json").read_text())
    diff = results["checkers"]["diff_of_one"]
    assert diff["valid"] is False
    assert diff["anomaly_counts"].get("diff-not-0-or-1", 0) >= 1
    example = diff["anomalies"][0]
    assert example["collection"] == "data" and example["found"] == 2
    assert "last_sut_start" in example["context"]
    assert results["checkers"]["sealed_state"]["valid"] is False
    # the on-call report: verdict, legend and an anomaly marker visible in a real browser
    dom, image = _in_chromium(run_dir / "report.html", tmp_path)
    assert ">INVALID<" in dom and 'id="legend"' in dom and "legend-anomaly" in dom
    assert "mark mark-anomaly" in dom and "records in Kafka" in dom  # the failing key's story
    assert _pixels_near(image, "#cf222e") > 5000  # the INVALID banner
    assert _pixels_near(image, "#bf3989", 16) > 100  # anomaly markers beside the legend swatch


def test_a_killed_harness_leaves_nothing_after_cleanup(tmp_path: Path) -> None:
    import os
    import signal
    import time

    output = tmp_path / "sealcheck.out"
    with open(output, "wb") as out:
        harness = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "sealcheck",
                "run",
                "--runs",
                str(tmp_path),
                "--no-progress",
                "--name",
                "killed",
                "--duration",
                "60",
                "--rate",
                "200",
            ],
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    history = tmp_path / "latest" / "history.jsonl"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and harness.poll() is None:
        if history.exists() and '"f":"warmed-up"' in history.read_text():
            break
        time.sleep(0.5)
    else:
        harness.kill()
        harness.wait()
        pytest.fail(f"the run never warmed up:\n{output.read_text()[-3000:]}")
    run_dir = (tmp_path / "latest").resolve()
    os.kill(harness.pid, signal.SIGKILL)
    harness.wait()
    time.sleep(2)
    cleaning = [sys.executable, "-m", "sealcheck", "cleanup", "--runs", str(tmp_path)]
    subprocess.run(cleaning, cwd=ROOT, check=True)  # the archive the run was stored in
    time.sleep(1)
    assert not [p for p in cleanup.leftovers() if p.run == str(run_dir)]
    alive = subprocess.run(["pgrep", "-f", str(run_dir)], capture_output=True, text=True)
    assert alive.stdout.strip() == ""
    # Written line by line: the history of the dead run is complete up to its death.
    loaded = History.load(run_dir / "history.jsonl")
    assert loaded.acked.lazy().collect().height > 0
    assert any(o["f"] == "sut-start" for o in loaded.ops)
    assert loaded.problems() and "without the harness's final 'inputs' op" in loaded.problems()[0]
    assert check_run(run_dir).valid is None  # an unfinished run is never judged valid


@pytest.fixture(scope="module")
def zombie_runs(
    tmp_path_factory: pytest.TempPathFactory,
) -> Callable[[str], tuple[int, str, Path]]:
    """The zombie and indeterminate nemeses on the correct pipeline and on the variant that
    ignores fencing (which only a second writer reveals), each run when first asked for."""
    done: dict[str, tuple[int, str, Path]] = {}

    def run(variant: str) -> tuple[int, str, Path]:
        if variant not in done:
            flags = ["--seed", "2", "--duration", "30", "--interval", "5", "--final-timeout", "60"]
            flags += ["--nemesis", "zombie,indeterminate", "--rate", "300"]
            if variant != "correct":
                flags += ["--broken", variant]
            done[variant] = sealcheck_run(tmp_path_factory.mktemp(variant), *flags)
        return done[variant]

    return run


def test_zombies_are_fenced_and_lost_replies_happen(
    zombie_runs: Callable[[str], tuple[int, str, Path]],
) -> None:
    code, out, run_dir = zombie_runs("correct")
    assert code == 0, out[-3000:]
    history = ops(run_dir)
    planned = json.loads((run_dir / "test.json").read_text())["schedule"]
    final = outcomes(history)
    zombies = {
        e["value"]["pid"]: e["value"]["code"]
        for e in history
        if e["f"] == "sut-exit" and e["value"].get("zombie")
    }
    started = [final[i] for i, a in enumerate(planned) if a["f"] == "zombie-start"]
    assert any(d["outcome"] == "happened" for d in started), started
    for done in started:
        if done["outcome"] == "happened":
            # the zombie ran beside its successor, and ended: fenced at its stale write, or
            # killed (and said so) when its successor had not written first
            assert zombies[done["zombie"]] in (3, -9), (done, zombies)
    # Two writers wrote: one of them (the zombie, or its successor when the zombie wrote
    # first) was fenced. Which one depends on timing; that fencing happened does not.
    codes = [e["value"]["code"] for e in history if e["f"] == "sut-exit"]
    assert 3 in codes, codes
    lost = [final[i] for i, a in enumerate(planned) if a["f"] == "fail-commit-reply"]
    assert any(d["outcome"] == "happened" for d in lost), lost
    assert any(o["f"] == "caught-up" for o in history)
    assert not [p for p in cleanup.leftovers() if p.run == str(run_dir)]


@pytest.mark.nightly  # one more run; the zombie's effect is shown in CI above
def test_only_a_zombie_reveals_ignored_fencing(
    zombie_runs: Callable[[str], tuple[int, str, Path]],
) -> None:
    code, out, run_dir = zombie_runs("ignore-fencing")
    assert code == 1, out[-3000:]
    results = json.loads((run_dir / "results.json").read_text())["checkers"]
    failed = {name for name, c in results.items() if c["valid"] is False}
    assert failed & {"diff_of_one", "unique_key", "sealed_state"}, failed
