"""A run whose inputs cannot be proven to be its own is UNKNOWN, never INVALID (issue 48).

With the history's final op the digests prove every input. Without it (the history deleted,
unusable, or cut before its last line) only the run id every writer stamps into its file can:
another run's export copied in used to be judged as this run's, and blamed on the job
(31,851 ``state-mismatch``, 21,023 ``phantom-value``). Each test is one case: the swap with the
history deleted or cut, a crashed run's own files still judged, an old run without ids."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sealcheck.checkers import check_run
from sealcheck.harness.cli import app as cli
from sealcheck.infra.sweep import Sweep
from sealcheck.rundir import runid
from sealcheck.rundir.captures import Capture, CaptureWriter
from sealcheck.rundir.files import ACKS, CAPTURES, EFFECTS, FRONTIERS, TOPIC, UPDATES
from sealcheck.rundir.history import History
from tests.runs import stored_run

#: every input a checker reads of a run of our pipeline (no captures, effects or snapshots)
INPUTS = (TOPIC, UPDATES, FRONTIERS, ACKS)


def ours(tmp_path: Path, seed: int = 11, name: str = "ours") -> Path:
    """A finished run whose every file carries its run id, as a run's does."""
    return stored_run(tmp_path / name, seed=seed, run_id=f"run-{name}")


def cut_history(run_dir: Path) -> None:
    """The history without its last line (the final op): no manifest proves anything."""
    path = run_dir / "history.jsonl"
    path.write_text("".join(path.read_text().splitlines(keepends=True)[:-1]))


def swap_export(run_dir: Path, other: Path) -> None:
    """Another run's export in place of this run's."""
    shutil.rmtree(run_dir / "export")
    shutil.copytree(other / "export", run_dir / "export")


def lose_one_update(run_dir: Path) -> None:
    """The export as it would be had the system lost one update of ``data``: the seeded
    violation (rewritten with the file's own metadata: still the run's own file)."""
    path = run_dir / UPDATES
    table = pq.read_table(path)
    data = [i for i, c in enumerate(table.column("collection").to_pylist()) if c == "data"]
    victim = data[len(data) // 2]
    kept = table.filter(pa.array([i != victim for i in range(table.num_rows)]))
    pq.write_table(kept, path)
    assert runid.file_run_id(path, run_dir) == runid.run_id(run_dir)


def no_anomaly_was_judged(res: Any) -> None:
    assert res.valid is None and res.checkers == {}, res.to_json()


# 1. Every writer stamps the run id test.json records; a directory without one gets none.


def test_every_input_a_run_writes_carries_the_id_test_json_records(tmp_path: Path) -> None:
    from sealcheck.core.effects import Upsert
    from sealcheck.rundir.effects import write_effects

    run_dir = ours(tmp_path)
    wanted = runid.run_id(run_dir)
    assert wanted == "run-ours" == History.load(run_dir / "history.jsonl").run_id()
    writer = CaptureWriter(run_dir / CAPTURES)
    writer.write(Capture({"data": (0, 1)}, rows=[("data", b"k", b"v", 0, 1)]))
    writer.close()
    write_effects(run_dir / TOPIC, lambda r: Upsert(r.key or b"", {"v": 1}), run_dir / EFFECTS)
    for rel in (*INPUTS, CAPTURES, EFFECTS):
        assert runid.file_run_id(run_dir / rel, run_dir) == wanted, rel
    doc = json.loads((run_dir / FRONTIERS).read_text())
    assert doc[runid.JSON_KEY] == wanted and runid.JSON_KEY not in runid.unstamped(doc)
    old = stored_run(tmp_path / "old")  # no test.json: the files of a test, unstamped
    for rel in INPUTS:
        assert runid.file_run_id(old / rel, old) is None, rel
    assert runid.JSON_KEY not in json.loads((old / FRONTIERS).read_text())


def test_the_delta_export_stamps_its_snapshots_and_versions_in_its_child_process(
    tmp_path: Path,
) -> None:
    from deltalake import CommitProperties, Transaction, write_deltalake

    from sealcheck.rundir.files import ASOF, VERSIONS
    from sealcheck.systems.outputs import DeltaOutput
    from tests.unit.test_delta_log import offsets_file

    schema = pa.schema([("key", pa.string()), ("value", pa.string())])
    for batch in (0, 1):
        for table in ("data", "errors"):
            rows = pa.table({"key": [f"k{batch}"], "value": ["v"]}, schema=schema)
            props = CommitProperties(
                custom_metadata={"userMetadata": f"batch={batch}"},
                app_transactions=[Transaction("job", batch)],
            )
            write_deltalake(str(tmp_path / table), rows, mode="append", commit_properties=props)
        offsets_file(tmp_path, batch, {0: batch + 1})
        (tmp_path / "checkpoint" / "commits").mkdir(parents=True, exist_ok=True)
        (tmp_path / "checkpoint" / "commits" / str(batch)).write_text("v1\n{}\n")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / runid.TEST_JSON).write_text(json.dumps({runid.TEST_KEY: "delta-run"}))
    out = DeltaOutput(
        checkpoint=tmp_path / "checkpoint",
        data=tmp_path / "data",
        errors=tmp_path / "errors",
        value="value",
        topic="t",
    )
    out.export(run_dir)  # `python -m sealcheck.systems.outputs.delta_export SPEC RUN_DIR`
    for rel in (UPDATES, FRONTIERS, ASOF, VERSIONS):
        assert runid.file_run_id(run_dir / rel, run_dir) == "delta-run", rel
    from sealcheck.rundir.files import step_labels

    assert step_labels(run_dir)  # its readers skip the stamp


def test_a_run_records_its_id_in_test_json_and_as_its_history_s_first_op(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``run_test`` itself (its session replaced by one that writes what a run's does)."""
    from sealcheck.harness.run import runner
    from sealcheck.harness.run.config import TestConfig
    from sealcheck.harness.run.test import build_test
    from tests.runs import finish_run_dir

    source = stored_run(tmp_path / "source")  # its topic and store, written again by the run
    records = [tuple(r) for r in pl.read_parquet(source / TOPIC).iter_rows()]
    frontiers = json.loads((source / FRONTIERS).read_text())
    db = source / "export" / "store.db"

    class Session:
        kept = None
        halt = SimpleNamespace(reason=None)  # never halted

        def __init__(self, test: Any, run_dir: Path, history: Any, *_: Any) -> None:
            self.run_dir, self.history = run_dir, history

        def run(self) -> str:
            from sealcheck.rundir.files import TopicRecord

            rows = [TopicRecord(*r) for r in records]
            uppers = {c: f["upper"] for c, f in frontiers.items()}
            finish_run_dir(self.run_dir, rows, str(db), uppers, h=self.history)
            return ""

    monkeypatch.setattr(runner, "sweep", lambda archive: Sweep(archive, [], []))
    monkeypatch.setattr(runner.procs, "mark_children", lambda *a, **k: None)
    monkeypatch.setattr(runner, "Session", Session)
    printed: list[str] = []
    console = SimpleNamespace(print=lambda *a, **k: printed.append(" ".join(map(str, a))))
    display = SimpleNamespace(console=console, log=printed.append, update=lambda **k: None)
    cfg = TestConfig(name="ids", runs_dir=str(tmp_path / "runs"), nemeses=())
    outcome = runner.run_test(build_test(cfg), display)  # type: ignore[arg-type]
    run_dir = outcome.run_dir
    assert outcome.valid is True, printed
    made = json.loads((run_dir / "test.json").read_text())[runid.TEST_KEY]
    assert made.startswith(f"ids/{run_dir.name}/")
    first = json.loads((run_dir / "history.jsonl").read_text().splitlines()[0])
    assert first == {**first, "index": 0, "process": "harness", "f": runid.RUN_OP}
    assert first["value"] == {"id": made}
    for rel in INPUTS:
        assert runid.file_run_id(run_dir / rel, run_dir) == made, rel


# 2. Another run's export with the history deleted or cut: UNKNOWN naming it, never INVALID.


@pytest.mark.parametrize("history", ["deleted", "cut before its last line"])
def test_another_run_s_export_without_the_manifest_is_refused_naming_it(
    tmp_path: Path, history: str
) -> None:
    run_dir, other = ours(tmp_path), ours(tmp_path, seed=12, name="other")
    swap_export(run_dir, other)
    assert check_run(run_dir).valid is None  # with the manifest: its digests already refuse
    if history == "deleted":
        (run_dir / "history.jsonl").unlink()
    else:
        cut_history(run_dir)
    res = check_run(run_dir)
    no_anomaly_was_judged(res)
    says = "the history" if history != "deleted" else "test.json"
    for rel in (UPDATES, FRONTIERS):
        line = f"{rel} is of run run-other, {says} is of run run-ours: another run's file"
        assert any(p.startswith(line) for p in res.input_problems), res.input_problems
    assert not any(p.startswith((TOPIC, ACKS)) for p in res.input_problems)  # its own


def test_sealcheck_check_exits_unknown_on_the_swap_in_one_line_per_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir, other = ours(tmp_path), ours(tmp_path, seed=12, name="other")
    swap_export(run_dir, other)
    (run_dir / "history.jsonl").unlink()
    assert cli.main(["check", str(run_dir)]) == cli.EXIT_UNKNOWN
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err and "invalid" not in out
    problems = [line for line in out.splitlines() if line.startswith("  input problem: ")]
    assert len(problems) == 3, out  # the updates, the frontiers, the history
    assert "export/updates.parquet is of run run-other" in problems[0]
    assert json.loads((run_dir / "results.json").read_text())["valid"] == "unknown"


def test_with_neither_history_nor_test_json_the_files_must_be_of_one_run(tmp_path: Path) -> None:
    run_dir, other = ours(tmp_path), ours(tmp_path, seed=12, name="other")
    (run_dir / "history.jsonl").unlink()
    (run_dir / "test.json").unlink()
    assert check_run(run_dir).checkers  # all of one run: judged (never valid)
    swap_export(run_dir, other)
    res = check_run(run_dir)
    no_anomaly_was_judged(res)
    assert any(p.startswith(f"{TOPIC} is of run run-ours, the other inputs of run run-other")
               for p in res.input_problems), res.input_problems  # fmt: skip


def test_a_history_and_test_json_of_different_runs_prove_nothing(tmp_path: Path) -> None:
    run_dir = ours(tmp_path)
    cut_history(run_dir)
    (run_dir / "test.json").write_text(json.dumps({runid.TEST_KEY: "run-else"}))
    res = check_run(run_dir)
    no_anomaly_was_judged(res)
    assert any("test.json is of run run-else" in p for p in res.input_problems)


# 3. A crashed run's own files are still judged: INVALID possible, VALID never.


def test_a_cut_history_with_every_file_of_its_run_still_finds_a_lost_update(
    tmp_path: Path,
) -> None:
    run_dir = ours(tmp_path)
    lose_one_update(run_dir)
    cut_history(run_dir)
    res = check_run(run_dir)
    assert res.valid is False, res.to_json()
    assert res.checkers["sealed_state"].valid is False
    assert "without the harness's final 'inputs' op" in res.input_problems[0]


@pytest.mark.parametrize("history", ["deleted", "cut before its last line"])
def test_a_correct_run_without_its_manifest_is_judged_but_never_valid(
    tmp_path: Path, history: str
) -> None:
    run_dir = ours(tmp_path)
    if history == "deleted":
        (run_dir / "history.jsonl").unlink()
    else:
        cut_history(run_dir)
    res = check_run(run_dir)
    assert res.valid is None and res.checkers, res.to_json()
    assert not any(r.valid is False for r in res.checkers.values()), res.to_json()
    assert len(res.input_problems) == 1  # only the history's: every file is the run's


# 4. Old runs (no ids) judge as before with their manifest, and are refused without it.


def test_an_old_run_with_its_manifest_is_judged_as_before(tmp_path: Path) -> None:
    old = stored_run(tmp_path)
    assert History.load(old / "history.jsonl").run_id() is None
    assert check_run(old).valid is True
    lose_one_update(old)  # changed after the manifest: refused by its digest, as before
    assert check_run(old).valid is None


def test_an_old_run_without_its_manifest_refuses_each_file_that_carries_no_id(
    tmp_path: Path,
) -> None:
    old = stored_run(tmp_path)
    cut_history(old)
    res = check_run(old)
    no_anomaly_was_judged(res)
    for rel in INPUTS:
        line = f"{rel} carries no run id (written before run ids, or not by the harness)"
        assert any(p.startswith(line) for p in res.input_problems), (rel, res.input_problems)
