"""The report says what *this* run judged (issue 48): for an output without bindings — SQLite,
PostgreSQL, Kafka topics, Delta tables alone — the states seen and judged and the batches they
name, never a sealed step or a bound record; for our pipeline, the sealed steps. Each kind's run
is made by its real output class (its states taken as a run takes them, the job's checkpoint
read at each), judged by the real checkers and rendered by the real report."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sealcheck.checkers import check_run
from sealcheck.core.effects import DeadLetter, Delete, Effects, Record, Upsert
from sealcheck.core.windows import streaming_windows
from sealcheck.harness.cli import app as cli
from sealcheck.report.headline import MEANING, judged_text
from sealcheck.report.report import render
from sealcheck.rundir.effects import write_effects
from sealcheck.rundir.files import EFFECTS, TopicRecord, write_topic
from sealcheck.rundir.history_writer import HistoryWriter, record_inputs
from sealcheck.rundir.states import read_states
from sealcheck.systems.job_checkpoint import batch_boundary, watch_checkpoint
from sealcheck.systems.outputs import PostgresOutput, SQLiteOutput, TopicOutput
from sealcheck.systems.outputs import topic as topic_module
from tests.runs import stored_run

WINDOWS = tuple(streaming_windows("checkpoint").values())
#: one partition, batches of three: k1..k4 upserted, k2 deleted, a record without a key
VALUES = [("k1", 1), ("k2", 1), ("k1", 2), ("k3", 1), (None, 0), ("k2", None), ("k4", 1)]
VALUES += [("k3", 2), ("k1", 3), ("k4", 2), ("k5", 1), ("k3", 3)]
RECORDS = [
    TopicRecord(0, i, None if k is None else k.encode(), None if v is None else b'{"v": %d}' % v)
    for i, (k, v) in enumerate(VALUES)
]
BATCH = 3
BATCHES = (len(RECORDS) + BATCH - 1) // BATCH  # 4


def effect(r: Record) -> Effects:
    """The job's mapping: an upsert of ``{"v": n}``, a delete, a dead letter for no key."""
    if r.key is None:
        return DeadLetter(f"{r.partition}:{r.offset}", {"why": "no key"})
    if r.value is None:
        return Delete(r.key.decode())
    return Upsert(r.key.decode(), json.loads(r.value))


def batch_effects(b: int, first_wins: bool = False) -> tuple[dict[str, Any], dict[str, str]]:
    """Batch ``b``'s upserts (None: delete) and dead letters, the last record of a key winning
    (``first_wins``: the first — a bug no prefix explains)."""
    data: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for r in RECORDS[b * BATCH : (b + 1) * BATCH]:
        if r.key is None:
            errors[f"0:{r.offset}"] = "no key"
        elif not (first_wins and r.key.decode() in data):
            data[r.key.decode()] = None if r.value is None else json.loads(r.value)["v"]
    return data, errors


class Run:
    """A run directory being written as the harness writes one: the job's checkpoint beside
    its output, the history (acknowledgements, the observer's uppers, a fault), the inputs."""

    def __init__(self, tmp_path: Path, out: Any, checkpoint: bool = True) -> None:
        self.root, self.dir, self.out = tmp_path / "job", tmp_path / "run", out
        for d in ("offsets", "commits"):
            (self.root / "checkpoint" / d).mkdir(parents=True)
        self.dir.mkdir()
        if checkpoint:
            watch_checkpoint(out, self.root, WINDOWS)
        if getattr(out, "between_batches", False):
            out.watch_batches(lambda: batch_boundary(self.root, WINDOWS))
        self.h = HistoryWriter(self.dir / "history.jsonl")
        for r in RECORDS:
            self.h.ack("w0", r.key, r.value, r.partition, r.offset)
        self.h.append("supervisor", "info", "sut-start", {"incarnation": 0, "pid": 10})

    def batches(
        self, sink: Callable[[int], None], mid: int | None = None, unseen: int | None = None
    ) -> None:
        """Run every batch through ``sink``; the harness looks after each but ``unseen`` (and,
        for batch ``mid``, also after its sink committed and before ``commits/N``); a kill
        before the second batch."""
        for b in range(BATCHES):
            if b == 1:
                self.h.append("nemesis", "info", "kill-sut", {"action": 0, "killed": 10})
                self.h.append("supervisor", "info", "sut-exit", {"incarnation": 0, "code": -9})
                self.h.append("supervisor", "info", "sut-start", {"incarnation": 1, "pid": 11})
            (self.root / "checkpoint" / "offsets" / str(b)).write_text("{}")
            sink(b)
            if b == mid:
                self.look()
            (self.root / "checkpoint" / "commits" / str(b)).write_text("{}")
            if b != unseen:
                self.look()

    def look(self) -> None:
        """The observer's sample."""
        self.h.append("observer", "info", "uppers", self.out.uppers())

    def finish(self, name: str, system: str = "user-job-sqlite") -> dict[str, Any]:
        """Dump, export, close the history, judge, render: results.json and the page."""
        write_topic(RECORDS, self.dir / "topic.parquet")
        write_effects(self.dir / "topic.parquet", effect, self.dir / EFFECTS)
        self.out.export(self.dir)
        self.h.append("harness", "info", "log-end", {"0": len(RECORDS)})
        self.h.append("harness", "info", "caught-up", {"took_s": 0.0})
        record_inputs(self.h, self.dir)
        self.h.close()
        doc = check_run(self.dir).to_json()
        (self.dir / "results.json").write_text(json.dumps(doc))
        config = {"name": name, "seed": 1, "system": system}
        (self.dir / "test.json").write_text(json.dumps({"config": config}))
        return doc


def sql_sink(db: Path, first_wins: bool = False) -> Callable[[int], None]:
    """A job's sink into SQLite: one transaction per batch."""
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE accounts (id TEXT PRIMARY KEY, v INTEGER, at TEXT)")
    conn.execute("CREATE TABLE dead_letters (id TEXT PRIMARY KEY, why TEXT)")
    conn.commit()

    def write(b: int) -> None:
        data, errors = batch_effects(b, first_wins)
        for k, v in data.items():
            if v is None:
                conn.execute("DELETE FROM accounts WHERE id = ?", (k,))
            else:
                conn.execute("INSERT OR REPLACE INTO accounts VALUES (?, ?, ?)", (k, v, f"b{b}"))
        conn.executemany("INSERT INTO dead_letters VALUES (?, ?)", errors.items())
        conn.commit()

    return write


def no_binding_claims(page: str, doc: dict[str, Any]) -> None:
    """What a report of an output without bindings never says."""
    assert MEANING[True] not in page and "every sealed step" not in page
    assert "sealed steps judged" not in page.lower()
    assert "input records bound to a sealed step" not in page  # no "0 of 12" table
    assert "no acknowledged write was seen sealed" not in page
    assert "keeps no bindings: which offsets each state read is unknown" in page
    assert '<table id="step-assignment">' not in page and '<table id="seal-lag">' not in page
    assert doc["facts"]["bindings_kept"] is False and doc["facts"]["steps"] is None


def test_a_sqlite_run_says_every_state_it_saw_and_the_batches_they_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = SQLiteOutput(tmp_path / "job" / "accounts.db", "accounts", "id", "dead_letters",
                       exclude=("at",))  # fmt: skip
    run = Run(tmp_path, out)
    run.batches(sql_sink(out.path), mid=1, unseen=1)  # batch 1 read only while in flight
    doc = run.finish("sqlite")
    assert doc["valid"] is True, doc["checkers"]
    prefix = doc["checkers"]["prefix"]["counts"]
    # 4 states: after batch 0; batch 1 read before its commits/1 (and not looked at again
    # before batch 2 changed the tables); after batches 2 and 3
    assert prefix["states_judged"] == 4 and prefix["final_state_judged"] == 1
    assert doc["facts"]["states"] == {"by": "samples", "seen": 4, "checkpoint": True,
                                      "named": 4, "first_batch": 0, "last_batch": 3,
                                      "in_flight": 1}  # fmt: skip
    page = render(run.dir)
    no_binding_claims(page, doc)
    assert (
        "Every applicable checker passed on complete inputs: every acknowledged write is in "
        "the topic, nothing was invented and every state the harness saw (4) is the upsert of "
        "a prefix of the input; the last is the whole input&#39;s." in page
    )
    assert "States judged by prefix: 4 — every state the harness saw; the last judged as" in page
    assert "Batches named: 4 of 4 states name the batches they follow (batches 0-3 " \
        "committed, from the job&#39;s checkpoint); 1 was read with a batch in flight (part " \
        "of it may be in the state)." in page  # fmt: skip
    assert "<td>1</td><td>batch 0 committed, batch 1 in flight; none committed since" in page
    assert "<td>2</td><td>batch 2 committed; batches 1-2 since the state before</td>" in page
    assert "Micro-batches" not in page
    lines = judged_text(doc)  # what `sealcheck run` and `check` print under the verdict
    assert lines[0].startswith("States judged by prefix: 4") and "batches 0-3" in lines[1]
    assert cli.main(["check", str(run.dir)]) == cli.EXIT_VALID
    printed = capsys.readouterr().out
    assert "\nStates judged by prefix: 4 — every state the harness saw;" in printed
    assert "sealed steps" not in printed and "every sealed step" not in printed


def test_a_postgres_run_says_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # no server in unit tests: PostgresOutput's reads go to a SQLite file; what the harness
    # does with them (states, their batches, the export) is PostgresOutput's own
    monkeypatch.setattr(PostgresOutput, "_connect", lambda self: SQLiteOutput._connect(lite))
    monkeypatch.setattr(PostgresOutput, "_version", SQLiteOutput._version)
    monkeypatch.setattr(PostgresOutput, "_read", SQLiteOutput._read)
    monkeypatch.setattr(PostgresOutput, "errors_of_reading", (sqlite3.Error,))
    lite = SQLiteOutput(tmp_path / "job" / "pg.db", "accounts", "id", "dead_letters")
    out = PostgresOutput("host=h dbname=jobs", "accounts", "id", "dead_letters",
                         exclude=("at",), between_batches=True)  # fmt: skip
    run = Run(tmp_path, out)
    run.batches(sql_sink(lite.path), mid=1)  # mid-batch: no state between batches
    doc = run.finish("postgres", "user-job-postgres")
    assert doc["valid"] is True, doc["checkers"]
    assert doc["checkers"]["prefix"]["counts"]["states_judged"] == 4
    assert doc["facts"]["states"]["in_flight"] == 0
    page = render(run.dir)
    no_binding_claims(page, doc)
    assert "every state the harness saw (4) is the upsert of a prefix of the input" in page
    assert "Batches named: 4 of 4 states name the batches they follow (batches 0-3 " \
        "committed, from the job&#39;s checkpoint)." in page  # fmt: skip


def test_a_topic_run_counts_the_states_that_changed_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    topics: dict[str, list[TopicRecord]] = {"out": [], "dl": []}

    def publish(b: int) -> None:
        data, errors = batch_effects(b)
        for name, rows in (("out", data.items()), ("dl", errors.items())):
            log = topics[name]
            for k, v in rows:
                value = None if v is None else json.dumps({"v": v} if name == "out" else
                                                          {"why": v}).encode()  # fmt: skip
                log.append(TopicRecord(0, len(log), k.encode(), value))

    def ends(self: TopicOutput) -> dict[str, dict[int, int]]:
        return {"data": {0: len(topics["out"])}, "errors": {0: len(topics["dl"])}}

    monkeypatch.setattr(TopicOutput, "_ends", ends)
    monkeypatch.setattr(topic_module, "dump_topic", lambda bootstrap, t: list(topics[t]))
    out = TopicOutput("localhost:9092", "out", "dl", key="id")
    run = Run(tmp_path, out)
    run.batches(publish)
    # a batch that writes again what is there (a replay, at least once): the log end moves,
    # the state does not
    (run.root / "checkpoint" / "offsets" / "4").write_text("{}")
    topics["out"].append(TopicRecord(0, len(topics["out"]), b"k5", b'{"v": 1}'))
    (run.root / "checkpoint" / "commits" / "4").write_text("{}")
    run.look()
    doc = run.finish("topic", "user-job-kafka")
    assert doc["valid"] is True, doc["checkers"]
    assert doc["checkers"]["prefix"]["counts"]["states_judged"] == 4
    assert doc["facts"]["states"]["seen"] == 5
    page = render(run.dir)
    no_binding_claims(page, doc)
    assert "every state the harness saw (5) is the upsert of a prefix of the input" in page
    assert "States judged by prefix: 4 of the 5 states the harness saw (the other changed " \
        "nothing: it equals the state before it)" in page  # fmt: skip


def test_a_delta_run_of_its_tables_alone_names_each_state_s_batch(tmp_path: Path) -> None:
    import pyarrow as pa
    from deltalake import CommitProperties, Transaction, write_deltalake

    from sealcheck.systems.outputs import DeltaOutput

    out = DeltaOutput(None, tmp_path / "job" / "accounts", "id", tmp_path / "job" / "dead")
    held: dict[str, dict[str, Any]] = {"data": {}, "errors": {}}

    def commit(b: int) -> None:  # the whole table each batch, tagged as Delta's txn does
        data, errors = batch_effects(b)
        for name, rows, col in (("data", data, "v"), ("errors", errors, "why")):
            if not rows:
                continue
            for k, v in rows.items():
                if v is None:
                    held[name].pop(k, None)
                else:
                    held[name][k] = v
            kind = pa.int64() if col == "v" else pa.string()
            table = pa.table({"id": list(held[name]), col: list(held[name].values())},
                             schema=pa.schema([("id", pa.string()), (col, kind)]))  # fmt: skip
            props = CommitProperties(custom_metadata={"userMetadata": f"batch={b}"},
                                     app_transactions=[Transaction("job", b)])  # fmt: skip
            path = out.data if name == "data" else out.errors
            write_deltalake(str(path), table, mode="overwrite", commit_properties=props)

    run = Run(tmp_path, out, checkpoint=False)
    run.batches(commit)
    doc = run.finish("delta-tables", "delta-streaming-tables")
    assert doc["valid"] is True, doc["checkers"]
    assert doc["checkers"]["prefix"]["counts"]["states_judged"] == 4
    assert doc["facts"]["states"]["by"] == "batches" and doc["facts"]["states"]["named"] == 4
    page = render(run.dir)
    no_binding_claims(page, doc)
    assert "every state of the tables (4, one per batch their commits name) is the upsert" in page
    assert "Batches named: every state is the batch its commits name (batches 0-3)." in page
    assert "<td>1</td><td>batch 1: data v1, errors v0</td>" in page


def test_our_pipeline_s_report_claims_its_sealed_steps(tmp_path: Path) -> None:
    run_dir = stored_run(tmp_path)
    doc = check_run(run_dir).to_json()
    (run_dir / "results.json").write_text(json.dumps(doc))
    (run_dir / "test.json").write_text(json.dumps({"config": {"name": "ours", "seed": 11}}))
    page = render(run_dir)
    assert MEANING[True] in page and doc["facts"]["bindings_kept"] is True
    counts = doc["checkers"]["sealed_state"]["counts"]
    judged = f"data {counts['data_steps_judged']}/{counts['data_steps_sealed']}"
    assert f"Sealed steps judged one by one / sealed: {judged}" in page
    assert '<table id="step-assignment">' in page and "States of the output" not in page
    assert "every state the harness saw" not in page


def test_a_prefix_anomaly_names_its_state_s_batch_and_the_fault_before(tmp_path: Path) -> None:
    out = SQLiteOutput(tmp_path / "job" / "accounts.db", "accounts", "id", "dead_letters",
                       exclude=("at",))  # fmt: skip
    run = Run(tmp_path, out)
    # batch 0 keeps k1=1 (offset 0) over k1=2 (offset 2): a prefix still explains it (k1 and
    # k2 at cut 2); batch 1 adds k3=1 (offset 3), which needs a cut past offset 2: no prefix
    run.batches(sql_sink(out.path, first_wins=True))
    doc = run.finish("sqlite-first-wins")
    prefix = doc["checkers"]["prefix"]
    assert doc["valid"] is False and prefix["anomaly_counts"].get("no-prefix"), prefix
    found = next(a for a in prefix["anomalies"] if a["kind"] == "no-prefix")
    assert found["step"] == 1
    assert found["context"]["batch"] == "batch 1 committed; batch 1 since the state before"
    record = read_states(run.dir / "export" / "versions.json", run.dir)
    assert record is not None and record.labels()[1] == found["context"]["batch"]
    assert found["context"]["last_nemesis"]["f"] == "kill-sut"  # the fault before batch 1
    assert found["context"]["last_sut_start"]["value"]["incarnation"] == 1
    assert isinstance(found["context"]["sealed_by_ns"], int)  # when the state was first seen
    page = render(run.dir)
    assert f"{found['step']} ({found['context']['batch']})" in page
    assert "state first seen at" in page and "step first seen sealed" not in page
    assert "bound to state" in page and "unknown (no bindings)" in page


def test_a_job_without_checkpoint_windows_says_its_states_name_no_batch(tmp_path: Path) -> None:
    out = SQLiteOutput(tmp_path / "job" / "accounts.db", "accounts", "id", "dead_letters",
                       exclude=("at",))  # fmt: skip
    run = Run(tmp_path, out, checkpoint=False)
    run.batches(sql_sink(out.path))
    doc = run.finish("sqlite-no-windows")
    assert doc["facts"]["states"]["checkpoint"] is False
    page = render(run.dir)
    assert "Batches named: none. The descriptor declares no windows told by a checkpoint" in page
    assert "so a state is known by its index only" in page


def test_a_run_judged_before_the_states_were_recorded_claims_no_sealed_step(
    tmp_path: Path,
) -> None:
    out = SQLiteOutput(tmp_path / "job" / "accounts.db", "accounts", "id", "dead_letters",
                       exclude=("at",))  # fmt: skip
    run = Run(tmp_path, out)
    run.batches(sql_sink(out.path))
    doc = run.finish("sqlite-judged-before")
    for key in ("bindings_kept", "states", "states_why"):  # as a check before them wrote it
        doc["facts"].pop(key)
    doc["checkers"]["prefix"]["counts"].pop("states_judged")
    (run.dir / "results.json").write_text(json.dumps(doc))
    page = render(run.dir)
    assert doc["valid"] is True and MEANING[True] not in page
    assert "every state the export holds is the upsert of a prefix of the input" in page
    assert "keeps no bindings: which offsets each state read is unknown" in page


def test_a_sealed_state_that_passed_without_its_counts_claims_no_step() -> None:
    """``sealed_state`` valid with no counts (a results.json of an older or hand-made run):
    the banner does not say that every sealed step equals the input."""
    from sealcheck.report.headline import meaning
    from sealcheck.rundir.facts import read_facts

    results = {"valid": True, "checkers": {"sealed_state": {"valid": True, "counts": {}}}}
    assert "every sealed step" not in meaning(results, read_facts(results))
