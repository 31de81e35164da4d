"""The checkers on a real SQLite store written by the step loop (with compaction), loaded the
way ``sealcheck check`` loads a run directory."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from sealcheck.checkers import CHECKERS, RunInputError, check_run, load_run
from sealcheck.harness.run.observer import Observer
from sealcheck.harness.run.workload import UpsertMix, upsert_records
from sealcheck.rundir.captures import CAPTURES, CaptureWriter
from sealcheck.rundir.files import write_topic
from sealcheck.rundir.history_writer import HistoryWriter
from sealcheck.systems.upsert_source.store import READER, export, read_capture, read_uppers
from sealcheck_upsert_source.loop import LoopConfig
from sealcheck_upsert_source.persist import open_store
from tests.runs import finish_run_dir, write_history
from tests.unit.test_loop import ListSource, catch_up, make_loop, quiet


def observed_run(
    tmp_path: Path, config: LoopConfig, sample_every: int
) -> tuple[Path, dict[str, int]]:
    """2,000 upserts through the step loop on a SQLite store, the harness's observer sampling
    (and capturing) after every ``sample_every``-th step; the run directory and the uppers."""
    src = ListSource(3)
    src.grow(upsert_records(random.Random(8), 2000, UpsertMix(keys=150, bad_ratio=0.05)))
    db = str(tmp_path / "s.db")
    store = open_store(db)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    history = HistoryWriter(run_dir / "history.jsonl")
    observer = Observer(
        lambda: read_uppers(db),
        history,
        capture=lambda since: read_capture(db, since),
        captures=CaptureWriter(run_dir / CAPTURES),
    )
    loop = make_loop(store, src, config, quiet)
    loop.rehydrate()
    while loop.step():
        if loop.t % sample_every == 0:
            observer.sample()
    observer.stop()
    uppers = store.uppers()
    store.close()
    finish_run_dir(run_dir, src.records(), db, uppers, history)
    history.close()
    return run_dir, uppers


@pytest.mark.parametrize("retain", [0, 2])
def test_compacted_and_uncompacted_stores_are_valid(tmp_path: Path, retain: int) -> None:
    # The harness's observer captures every step as it is sealed (sealcheck.rundir.captures), so the
    # steps compaction merges are still judged one by one.
    config = LoopConfig(max_records_per_step=150, retain_steps=retain, compact_every=3)
    run_dir, uppers = observed_run(tmp_path, config, sample_every=1)
    assert (load_run(run_dir).steps.export_sinces["data"] > 0) == (retain > 0)
    result = check_run(run_dir)
    verdicts = {n: r.valid if r.applicable else r.word() for n, r in result.checkers.items()}
    assert verdicts == {
        **dict.fromkeys(CHECKERS, True),
        "as_of": "not applicable",
        "versions": "not applicable",
    }
    assert result.valid is True and result.input_problems == []
    counts = result.checkers["sealed_state"].counts
    assert counts["data_steps_judged"] == counts["data_steps_sealed"] == uppers["data"]
    assert (run_dir / "export" / "updates.parquet").exists()


@pytest.mark.parametrize("hold_steps", [0, 50])
def test_a_read_hold_keeps_the_steps_an_observer_lagging_behind_has_not_captured(
    tmp_path: Path, hold_steps: int
) -> None:
    # The observer samples only every 4th step while compaction keeps 1 step: without a
    # read hold the steps between samples are merged before anything captured them
    # (UNKNOWN, never VALID); with one (the capture writes it) every step is judged.
    config = LoopConfig(
        max_records_per_step=100, retain_steps=1, compact_every=1, hold_steps=hold_steps
    )
    run_dir, uppers = observed_run(tmp_path, config, sample_every=4)
    assert uppers["data"] == 20 and load_run(run_dir).steps.export_sinces["data"] > 10
    result = check_run(run_dir)
    counts = result.checkers["sealed_state"].counts
    if hold_steps:
        assert result.valid is True and result.input_problems == []
        assert counts["data_steps_judged"] == counts["data_steps_sealed"] == uppers["data"]
    else:
        assert result.valid is None and result.checkers["sealed_state"].valid is None
        assert counts["data_steps_judged"] < uppers["data"]


def test_a_compacted_store_without_captures_is_unknown_naming_the_steps(tmp_path: Path) -> None:
    src = ListSource(3)
    src.grow(upsert_records(random.Random(8), 2000, UpsertMix(keys=150, bad_ratio=0.05)))
    store = open_store(str(tmp_path / "s.db"))
    catch_up(store, src, LoopConfig(max_records_per_step=150, retain_steps=2, compact_every=3))
    uppers = store.uppers()
    store.close()
    run_dir = finish_run_dir(tmp_path / "run", src.records(), str(tmp_path / "s.db"), uppers)
    result = check_run(run_dir)
    state = result.checkers["sealed_state"]
    assert result.valid is None and state.valid is None and not state.anomaly_counts
    assert "were merged by compaction before the harness captured them" in str(state.error)


def test_a_run_directory_without_a_topic_dump_says_so(tmp_path: Path) -> None:
    with pytest.raises(RunInputError, match=r"topic\.parquet is missing"):
        load_run(tmp_path)


def test_sealcheck_check_writes_results_and_exits_with_the_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from sealcheck.harness.cli import app as cli

    src = ListSource(2)
    src.grow(upsert_records(random.Random(9), 300, UpsertMix(keys=40)))
    store = open_store(str(tmp_path / "s.db"))
    catch_up(store, src, LoopConfig(max_records_per_step=50))
    store.close()
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "test.json").write_text(json.dumps({"run_id": "r"}))  # files stamped with it
    write_topic(src.records(), run_dir / "topic.parquet")
    export(str(tmp_path / "s.db"), run_dir)
    assert cli.main(["check", str(run_dir)]) == cli.EXIT_UNKNOWN  # no history: no seals seen
    out = capsys.readouterr().out
    assert "sealed_state: valid" in out and "verdict: unknown" in out
    assert "history.jsonl does not exist" in out
    assert (run_dir / "results.json").exists()
    # Never valid without the history, not even for one checker that does not read it.
    assert cli.main(["check", str(run_dir), "--checker", "sealed_state"]) == cli.EXIT_UNKNOWN
    write_history(run_dir, src.records(), load_run(run_dir).uppers)
    assert cli.main(["check", str(run_dir)]) == cli.EXIT_VALID
    capsys.readouterr()
    # a subset that passes proves only part: unknown, with the checker's own line valid
    assert cli.main(["check", str(run_dir), "--checker", "sealed_state"]) == cli.EXIT_UNKNOWN
    out = capsys.readouterr().out
    assert "sealed_state: valid" in out and "not every checker ran" in out
    (run_dir / "report.html").write_text("<div id='verdict'>UNKNOWN</div>")  # an older verdict
    assert cli.main(["check", str(run_dir)]) == cli.EXIT_VALID
    page = (run_dir / "report.html").read_text()
    assert 'id="verdict"' in page and ">VALID<small>" in page and "UNKNOWN</div>" not in page
    assert cli.main(["check", str(tmp_path / "nope")]) == cli.EXIT_BAD_ARGS
    assert cli.main(["check", str(run_dir), "--checker", "nope"]) == cli.EXIT_BAD_ARGS
    assert "unknown checker 'nope'" in capsys.readouterr().err


@pytest.mark.parametrize("torn", [False, True])
def test_a_lost_write_is_found_in_a_history_file(tmp_path: Path, torn: bool) -> None:
    src = ListSource(2)
    src.grow(upsert_records(random.Random(10), 300, UpsertMix(keys=40, bad_ratio=0.1)))
    store = open_store(str(tmp_path / "s.db"))
    catch_up(store, src, LoopConfig(max_records_per_step=50))
    store.close()
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "test.json").write_text(json.dumps({"run_id": "r"}))  # files stamped with it
    write_topic(src.records(), run_dir / "topic.parquet")
    export(str(tmp_path / "s.db"), run_dir)
    run = {"index": 0, "time": 0, "process": "harness", "type": "info", "f": "run"}
    ops = [
        {
            "index": i,
            "time": i,
            "process": "w0",
            "type": "ok",
            "f": "write",
            "value": {
                "key_hex": None if r.key is None else r.key.hex(),
                "value_hex": None if r.value is None else r.value.hex(),
                "partition": r.partition,
                "offset": r.offset,
            },
        }
        for i, r in enumerate(src.records(), start=1)
    ]
    lost = {**ops[-1], "index": len(ops) + 1, "value": {**ops[-1]["value"], "offset": 10**6}}
    lines = [json.dumps(o) for o in [{**run, "value": {"id": "r"}}, *ops, lost]]
    tail = '{"index": 9' if torn else ""  # a torn last line: the harness died mid-write
    (run_dir / "history.jsonl").write_text("\n".join(lines) + "\n" + tail)
    res = check_run(run_dir).checkers["completeness"]
    assert res.anomaly_counts == {"kafka-lost-write": 1}
    assert res.anomalies[0].expected["offset"] == 10**6
    assert res.counts["acknowledged_writes_checked"] == len(ops) + 1


def test_a_capture_without_a_hold_leaves_the_store_unwritten(tmp_path: Path) -> None:
    # The deployment captures with hold=False when its store is on a lazy disk: an fsync of
    # the harness's would make the pipeline's un-fsynced pages durable with it.
    src = ListSource(2)
    src.grow(upsert_records(random.Random(9), 300, UpsertMix(keys=40)))
    db = str(tmp_path / "s.db")
    store = open_store(db)
    catch_up(store, src, LoopConfig(max_records_per_step=50))
    everything = dict.fromkeys(("bindings", "data", "errors"), 3)
    before = Path(db + "-wal").read_bytes()
    got = read_capture(db, everything, hold=False)
    assert got is not None and got.ranges and store.holds() == {}
    assert Path(db + "-wal").read_bytes() == before
    assert read_capture(db, everything) is not None and store.holds() == {READER: 2}
    store.close()


def _compacted_run(tmp_path: Path) -> Path:
    """A run directory whose compacted store is judged step by step through its captures."""
    config = LoopConfig(max_records_per_step=150, retain_steps=2, compact_every=3)
    return observed_run(tmp_path, config, sample_every=1)[0]


#: the captures proven before anything is read (a small file), or in a thread beside the
#: reading (a big one: every file counts as big when the threshold is 0)
PROOF_PATHS = pytest.mark.parametrize("big", [False, True], ids=["small", "big"])


def _proof_path(monkeypatch: pytest.MonkeyPatch, big: bool) -> None:
    from sealcheck.checkers import load

    if big:
        monkeypatch.setattr(load, "_BIG", 0)


@PROOF_PATHS
def test_the_captured_steps_are_read_once_and_judged_as_proven(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, big: bool
) -> None:
    # The file changes right after it was read: what is judged is what was read and proven,
    # not what a second read would find.
    from sealcheck.rundir import files

    _proof_path(monkeypatch, big)
    run_dir, real, reads = _compacted_run(tmp_path), files.hold, list[str]()

    def changed_after_reading(run_dir: Path, rel: str, entry: object) -> bytes | str:
        reads.append(rel)
        data = real(run_dir, rel, entry)
        (run_dir / rel).write_bytes(b"another file")
        return data

    monkeypatch.setattr(files, "hold", changed_after_reading)
    result = check_run(run_dir)
    assert reads == [CAPTURES]
    assert result.valid is True and result.input_problems == []


@PROOF_PATHS
def test_captured_bytes_that_are_not_the_run_s_are_refused_though_the_file_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, big: bool
) -> None:
    # The bytes parsed differ from the file on disk (it changed between reads): the digest is
    # of the bytes parsed, so the run is refused, not judged from bytes nobody proved.
    from sealcheck.rundir import files

    _proof_path(monkeypatch, big)
    run_dir, real = _compacted_run(tmp_path), files.hold

    def tampered(run_dir: Path, rel: str, entry: object) -> bytes | str:
        data = real(run_dir, rel, entry)
        assert isinstance(data, bytes)
        return data[:-1] + bytes([data[-1] ^ 1])

    monkeypatch.setattr(files, "hold", tampered)
    refusals = load_run(run_dir).refusals
    assert [r for r in refusals if r.startswith(f"{CAPTURES} is not the file")], refusals
    assert check_run(run_dir).valid is None


@PROOF_PATHS
def test_captures_grown_unreadable_or_gone_are_refused_in_one_line_and_never_parsed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, big: bool
) -> None:
    # Nothing of the captures is parsed then, from the bytes or from the path, and no more of
    # a grown file is read than the manifest records.
    from sealcheck.checkers import steps

    _proof_path(monkeypatch, big)
    run_dir = _compacted_run(tmp_path)
    path, original = run_dir / CAPTURES, (run_dir / CAPTURES).read_bytes()
    monkeypatch.setattr(steps.captures, "read", lambda _: pytest.fail("captures parsed"))
    expected = {
        "grown": f"{CAPTURES} is not the file the run produced (more than {len(original):,} bytes",
        "unreadable": f"{path} is a directory, not a regular file",  # never opened
        "gone": f"{CAPTURES} is missing, but the history records it",
    }
    for how, line in expected.items():
        if how == "grown":
            path.write_bytes(original + b"\0" * (1 << 20))
        elif how == "unreadable":
            path.unlink()
            path.mkdir()
        else:
            path.rmdir()
        run = load_run(run_dir)
        assert [r for r in run.refusals if r.startswith(line)] == run.refusals[:1], how
        assert check_run(run_dir).valid is None
