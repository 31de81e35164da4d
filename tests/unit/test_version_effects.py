"""Versions whose rows differ in a column (issue 53): a release 2 that adds ``tier``. The column
every version writes is judged by every checker as in any run (the harness splits the new one
off the export); the new one by the ``versions`` checker, against the version that wrote each
row: valid for a correct release 2, each seeded mistake caught at its key, nothing judged that
no mapping says (a rollback), and versions that differ elsewhere refused before judging."""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow.parquet as pq
import pytest

from sealcheck import Delete, DeltaOutput, Job, JobRun, Record, Upsert
from sealcheck.checkers import CHECKERS, run_checkers
from sealcheck.checkers.facts import sealed_ranges
from sealcheck.checkers.inputs import RunData
from sealcheck.checkers.schemas import EFFECTS_SCHEMA, TOPIC_SCHEMA, UPDATES_SCHEMA
from sealcheck.checkers.stories import VERSIONED_COLLECTION, stories
from sealcheck.checkers.version_states import Stretch, stretches
from sealcheck.checkers.versions import handover
from sealcheck.core.effects import EffectError, encode_key, encode_row
from sealcheck.core.version_effects import VersionEffects
from sealcheck.rundir.files import (
    UPDATES,
    VERSION_EFFECTS,
    VERSIONED,
    TopicRecord,
    write_export,
    write_topic,
)
from sealcheck.rundir.history import VERSION, History
from sealcheck.rundir.names import SUT_EXIT, SUT_START
from sealcheck.rundir.version_effects import (
    check_versions,
    held_columns,
    split_export,
    write_version_effects,
)
from sealcheck_upsert_source.loop import choose_range, diff_bindings
from tests.runs import final_ops


def tier(n: int) -> str:
    return "even" if n % 2 == 0 else "odd"


@dataclass(frozen=True)
class Accounts(Job):
    """The descriptor of a job whose release 2 adds ``tier``."""

    name = "accounts"
    versions = ("v1", "v2")

    def command(self, run: JobRun) -> list[str]:
        return ["job"]

    def output(self, run: JobRun) -> DeltaOutput:
        return DeltaOutput(run.dir / "checkpoint", run.dir / "accounts", "id")

    def effect(self, record: Record, version: str = "v1") -> Upsert | Delete:
        key = (record.key or b"").decode()
        if record.value is None:
            return Delete(key)
        n = json.loads(record.value)["v"]
        row: dict[str, Any] = {"amount": n}
        if version == "v2":
            row["tier"] = tier(n)
        return Upsert(key, row)


KEYS = [b"a", b"b", b"c", b"d", b"e", b"f"]
#: values written per step; a tombstone now and then; ``z`` written once, first
PAIRS = [(b"z", b'{"v": 1001}')] + [
    (KEYS[i % 6], None if i % 11 == 10 else json.dumps({"v": i}).encode()) for i in range(72)
]

#: how one version writes a record into the table's row (None: the row as it was, a delete)
Writer = Callable[[dict[str, Any] | None, int], dict[str, Any]]


def v1_writes(old: dict[str, Any] | None, n: int) -> dict[str, Any]:
    """Release 1's MERGE: ``UPDATE SET amount`` (a column it does not know stays as it was)."""
    return {**(old or {}), "amount": n}


def v2_writes(old: dict[str, Any] | None, n: int) -> dict[str, Any]:
    return {**(old or {}), "amount": n, "tier": tier(n)}


def v2_tier_on_insert_only(old: dict[str, Any] | None, n: int) -> dict[str, Any]:
    """The mistake: ``tier`` in the INSERT, forgotten in the UPDATE SET."""
    return {**old, "amount": n} if old is not None else {"amount": n, "tier": tier(n)}


def v2_tier_inverted(old: dict[str, Any] | None, n: int) -> dict[str, Any]:
    return {**(old or {}), "amount": n, "tier": tier(n + 1)}


def run_of(
    tmp: Path,
    plan: list[tuple[str, Writer]],
    steps_each: int = 4,
    step: int = 3,
    bindings: bool = True,
    job: Job | None = None,
    idle: int = 0,
    alter: bool = False,
    trailing: str | None = None,
    backfill: bool = False,
) -> RunData:
    """A run of the job whose incarnations run ``plan`` (version, writer) in turn, each for
    ``steps_each`` steps, written and exported as the harness does (effects, export, split);
    without ``bindings``, as an output observed from outside exports it (its states only).
    ``idle``: observer readings of an unchanged upper after each start (a slow start);
    ``alter``: the first step of a version after another adds ``tier`` (null) to every row
    (``ALTER TABLE ... ADD COLUMN``); ``trailing``: a last incarnation of that version that
    seals nothing; ``backfill``: as ``alter``, with ``tier`` backfilled from ``amount``,
    credited to the step before (as Delta credits a commit outside any batch)."""
    logs: list[list[TopicRecord]] = [[], []]
    for k, v in PAIRS:
        p = zlib.crc32(k) % 2
        logs[p].append(TopicRecord(p, len(logs[p]), k, v))
    records = [r for log in logs for r in log]
    write_topic(records, tmp / "topic.parquet")
    versions = (job or Accounts()).version_effects()
    assert versions is not None
    cols = write_version_effects(
        tmp / "topic.parquet", versions, tmp / "effects.parquet", tmp / VERSION_EFFECTS
    )
    assert cols == ("tier",)
    end = {p: len(log) for p, log in enumerate(logs)}
    rows: list[tuple[str, bytes, bytes | None, int, int]] = []
    table: dict[bytes, dict[str, Any]] = {}
    bound: dict[int, int] = {}
    ops: list[dict[str, Any]] = []

    def op(f: str, value: Any, process: str = "harness") -> None:
        t = (len(ops) + 1) * 1000
        ops.append({"index": len(ops), "time": t, "process": process, "type": "info", "f": f,
                    "value": value})  # fmt: skip

    t = 0
    for inc in range(10_000):
        version, writes = plan[min(inc, len(plan) - 1)]
        op(VERSION, {"incarnation": inc, "version": version})
        op(SUT_START, {"incarnation": inc})
        for _ in range(idle):
            op("uppers", {"bindings": t, "data": t, "errors": t}, "observer")
        if (alter or backfill) and inc > 0:  # the new version's ALTER TABLE: every row
            at = t - 1 if backfill else t  # gets the column
            for key, old in sorted(table.items()):
                if "tier" not in old:
                    rows.append(("data", key, encode_row(old), at, -1))
                    table[key] = {**old, "tier": tier(old["amount"]) if backfill else None}
                    rows.append(("data", key, encode_row(table[key]), at, 1))
        for _ in range(steps_each):
            nxt = choose_range(bound, end, step)
            if all(o == bound.get(p, 0) for p, o in nxt.items()):
                break
            rows += [
                ("bindings", u.key, u.value, u.ts, u.diff) for u in diff_bindings(bound, nxt, t)
            ]
            for r in records:
                if bound.get(r.partition, 0) <= r.offset < nxt[r.partition]:
                    old = table.get(r.key or b"")
                    if old is not None:
                        rows.append(("data", r.key or b"", encode_row(old), t, -1))
                    if r.value is None:
                        table.pop(r.key or b"", None)
                        continue
                    new = writes(old, json.loads(r.value)["v"])
                    table[r.key or b""] = new
                    rows.append(("data", r.key or b"", encode_row(new), t, 1))
            bound, t = nxt, t + 1
            op("uppers", {"bindings": t, "data": t, "errors": t}, "observer")
        op(SUT_EXIT, {"incarnation": inc, "code": -9})
        if all(bound.get(p, 0) == e for p, e in end.items()) and trailing is not None:
            op(VERSION, {"incarnation": inc + 1, "version": trailing})
            op(SUT_START, {"incarnation": inc + 1})
            op(SUT_EXIT, {"incarnation": inc + 1, "code": 0})
        if all(bound.get(p, 0) == e for p, e in end.items()):
            break
    uppers = {"bindings": t, "data": t, "errors": t}
    frontiers: dict[str, dict[str, Any]] = {c: {"upper": u, "since": 0} for c, u in uppers.items()}
    if not bindings:
        rows = [r for r in rows if r[0] != "bindings"]
        frontiers["bindings"] = {"upper": 0, "since": 0, "kept": False}
    write_export(tmp, frontiers, [rows])
    split_export(tmp, cols)
    topic = pl.DataFrame(
        [(r.partition, r.offset, r.key, r.value) for r in records],
        schema=TOPIC_SCHEMA,
        orient="row",
    )
    acked = topic.select(pl.lit(0, pl.Int64).alias("time"), "partition", "offset", "key", "value")
    ops += final_ops(len(ops), (len(ops) + 1) * 1000, end, acked.height)
    return RunData(
        topic,
        pl.read_parquet(tmp / UPDATES).cast(UPDATES_SCHEMA),
        uppers,
        dict.fromkeys(uppers, 0),
        History(acked, ops),
        stated=pl.read_parquet(tmp / "effects.parquet").cast(EFFECTS_SCHEMA),
        version_effects=pl.read_parquet(tmp / VERSION_EFFECTS),
        versioned=pl.read_parquet(tmp / VERSIONED),
        versioned_held=held_columns(tmp / VERSIONED),
        unkept=frozenset() if bindings else frozenset({"bindings"}),
    )


def verdicts(run: RunData) -> dict[str, object]:
    out = run_checkers(run).checkers
    return {n: r.valid if r.applicable else r.word() for n, r in out.items()}


ALL_VALID = {**dict.fromkeys(CHECKERS, True), "as_of": "not applicable"}


def test_a_correct_release_2_is_valid_by_every_checker(tmp_path: Path) -> None:
    run = run_of(tmp_path, [("v1", v1_writes), ("v2", v2_writes)])
    assert verdicts(run) == ALL_VALID
    res = run_checkers(run).checkers["versions"]
    assert res.counts["keys_judged"] > 0 and res.counts["keys_after_cut"] > 0
    assert res.counts["earlier_states_judged"] > 0  # every state, not only the last


def v2_wrong_at_first(old: dict[str, Any] | None, n: int) -> dict[str, Any]:
    """A mistake the last state hides: release 2 inverts ``tier`` for the records before
    offset 20 of either partition (values below 40), and its later writes overwrite them."""
    return {**(old or {}), "amount": n, "tier": tier(n + 1 if n < 40 else n)}


@pytest.mark.parametrize("bindings", [True, False], ids=["bindings", "states"])
def test_a_wrong_earlier_state_is_caught_though_the_last_is_right(
    tmp_path: Path, bindings: bool
) -> None:
    run = run_of(tmp_path, [("v1", v1_writes), ("v2", v2_wrong_at_first)], bindings=bindings)
    found = verdicts(run)  # without bindings, the checkers that need them do not apply
    assert found["versions"] is False and False not in {found[n] for n in found if n != "versions"}
    res = run_checkers(run).checkers["versions"]
    first = res.anomalies[0]  # the last state is right: every anomaly is an earlier state
    assert all(a.detail.startswith("from ") for a in res.anomalies)
    assert first.step == 4 and first.key in {k.decode() for k in KEYS}
    assert "v1 (incarnation 0), v2 (incarnation 1) may have written it then" in first.detail
    assert '"tier":null' in first.expected and first.found != first.expected


def test_a_row_rewritten_by_release_2_is_its_own_even_where_release_1_wrote_it_so(
    tmp_path: Path,
) -> None:
    """A release 2 that leaves ``tier`` null in its UPDATE (release 1's row, as release 2
    reads it) is blamed at every state it rewrote after release 1 exited, not only the last."""
    run = run_of(tmp_path, [("v1", v1_writes), ("v2", v2_tier_on_insert_only)])
    res = run_checkers(run).checkers["versions"]
    earlier = [a for a in res.anomalies if a.detail.startswith("from ")]
    assert earlier and all(a.step is not None and a.step >= 6 for a in earlier), earlier
    assert "only v2 (incarnation 1) may have written it then" in earlier[0].detail


@pytest.mark.parametrize(
    ("plan", "kw"),
    [
        ([("v1", v1_writes), ("v2", v2_writes)], {"idle": 2, "alter": True}),
        ([("v1", v1_writes), ("v2", v2_writes)], {"bindings": False}),
        ([("v1", v1_writes), ("v2", v2_writes), ("v1", v1_writes), ("v2", v2_writes)], {}),
    ],
    ids=["alter-after-a-slow-start", "states", "rolled-back-and-upgraded-again"],
)
def test_every_earlier_state_of_a_correct_release_2_is_explained(
    tmp_path: Path, plan: list[tuple[str, Writer]], kw: dict[str, Any]
) -> None:
    run = run_of(tmp_path, plan, steps_each=2, **kw)
    found = verdicts(run)
    assert found["versions"] is True and False not in found.values() and None not in found.values()
    counts = run_checkers(run).checkers["versions"].counts
    assert counts["earlier_states_judged"] > 0
    if len(plan) > 2:  # what the rolled-back release 1 may have written is not judged
        assert counts["earlier_states_not_judged_rollback"] > 0


def test_each_incarnation_may_have_written_from_its_start_to_its_second_reading_after(
    tmp_path: Path,
) -> None:
    plan = [("v1", v1_writes), ("v2", v2_writes), ("v1", v1_writes)]
    run = run_of(tmp_path, plan, steps_each=2)
    runs = stretches(run.history, ("v1", "v2"))  # v1 runs again until the run ends
    assert runs[:3] == [
        Stretch(0, "v1", 0, 4, False),  # sealed 0-1; readings 3, 4 after its exit
        Stretch(1, "v2", 2, 6, False),
        Stretch(2, "v1", 4, 8, True),  # rolled back
    ]
    assert runs[-1].hi is None  # no reading followed the last exit


def test_a_run_that_never_upgraded_is_valid_with_the_new_column_absent(tmp_path: Path) -> None:
    assert verdicts(run_of(tmp_path, [("v1", v1_writes)])) == ALL_VALID


def test_a_release_2_that_forgets_the_column_in_its_update_is_caught(tmp_path: Path) -> None:
    run = run_of(tmp_path, [("v1", v1_writes), ("v2", v2_tier_on_insert_only)])
    found = verdicts(run)
    assert found == {**ALL_VALID, "versions": False}  # every other column is right
    shown = run_checkers(run).checkers["versions"].anomalies
    bad = shown[0]  # the earliest first: release 2's first UPDATE of a row release 1 wrote
    assert bad.kind == "versioned-column-mismatch" and bad.key in {k.decode() for k in KEYS}
    assert json.loads(bad.found)["tier"] is None and '"tier":"' in bad.expected
    assert "only v2 (incarnation 1) may have written it then" in bad.detail
    steps = [a.step for a in shown]
    assert steps == sorted(steps), steps  # type: ignore[type-var]


def test_the_failing_keys_story_shows_the_new_column_beside_the_others(tmp_path: Path) -> None:
    run = run_of(tmp_path, [("v1", v1_writes), ("v2", v2_tier_on_insert_only)])
    bad = run_checkers(run).checkers["versions"].anomalies[0]
    told, _ = stories(run, sealed_ranges(run), [bad])
    rows = [(u.collection, u.value, u.step, u.diff) for u in told[0].updates]
    assert ("data", bad.step) in {(c, s) for c, _, s, _ in rows}, rows  # the rewrite
    held = [v for c, v, s, d in rows if c == VERSIONED_COLLECTION and d > 0 and s <= bad.step]
    assert held[-1] == '{"tier":null}', rows  # and tier as it was: null
    assert [s for _, _, s, _ in rows] == sorted(s for _, _, s, _ in rows)


def v2_wrong_at_last(old: dict[str, Any] | None, n: int) -> dict[str, Any]:
    """Release 2 inverts ``tier`` for each key's last record alone (values from 66)."""
    return {**(old or {}), "amount": n, "tier": tier(n + 1 if n >= 66 else n)}


def test_a_wrong_last_state_names_the_version_that_wrote_it(tmp_path: Path) -> None:
    run = run_of(tmp_path, [("v1", v1_writes), ("v2", v2_wrong_at_last)])
    res = run_checkers(run).checkers["versions"]
    assert res.valid is False and res.anomalies
    for bad in res.anomalies:  # only last states are wrong
        assert "its row last changed at step" in bad.detail and "v2 wrote it" in bad.detail


def test_without_bindings_the_states_tell_who_wrote_a_row(tmp_path: Path) -> None:
    """An output observed from outside (SQLite) keeps no bindings: the state a row last
    changed in, seen after release 1's exit, says release 2 wrote it."""
    good = run_of(tmp_path, [("v1", v1_writes), ("v2", v2_writes)], bindings=False)
    assert verdicts(good)["versions"] is True
    bad = run_of(tmp_path, [("v1", v1_writes), ("v2", v2_tier_on_insert_only)], bindings=False)
    assert verdicts(bad)["versions"] is False


def v2_not_read(old: dict[str, Any] | None, n: int) -> dict[str, Any]:
    """Release 2 is right, but the output leaves ``tier`` out (the descriptor's ``exclude``)."""
    return {**(old or {}), "amount": n}


def test_a_new_column_the_output_never_reads_is_unknown_not_blamed(tmp_path: Path) -> None:
    run = run_of(tmp_path, [("v1", v1_writes), ("v2", v2_not_read)])
    res = run_checkers(run).checkers["versions"]
    assert res.valid is None and "no row of the export holds tier" in (res.error or ""), res
    assert "exclude" in (res.error or "")


def test_versions_are_checked_on_a_sample_before_the_run(tmp_path: Path) -> None:
    @dataclass(frozen=True)
    class BadMigrate(Accounts):
        def migrate(self, row: Any, version: str) -> dict[str, Any]:
            return {**row, "tier": row["missing"]}

    sample = [Record(0, i, b"a", json.dumps({"v": i}).encode()) for i in range(3)]
    good = Accounts().version_effects()
    assert good is not None and check_versions(sample, good) == 3
    bad = BadMigrate().version_effects()
    assert bad is not None
    with pytest.raises(EffectError, match=r"migrate raised on v1's row of record partition 0"):
        check_versions(sample, bad)


def test_a_release_2_that_writes_the_wrong_value_is_caught(tmp_path: Path) -> None:
    run = run_of(tmp_path, [("v1", v1_writes), ("v2", v2_tier_inverted)])
    assert verdicts(run) == {**ALL_VALID, "versions": False}


def test_a_run_that_rolled_back_and_ended_on_release_1_judges_no_new_column(
    tmp_path: Path,
) -> None:
    """Release 1 after release 2 leaves ``tier`` as release 2 wrote it for an older record:
    no mapping says that, so nothing of it is judged, and the run says so."""
    plan = [("v1", v1_writes), ("v2", v2_writes), ("v1", v1_writes)]
    run = run_of(tmp_path, plan, steps_each=2)
    res = run_checkers(run).checkers["versions"]
    assert not res.applicable and "rollback" in (res.error or "")
    assert verdicts(run) == {**ALL_VALID, "versions": "not applicable"}


def test_the_cut_is_the_second_reading_after_the_last_exit_of_another_version(
    tmp_path: Path,
) -> None:
    run = run_of(tmp_path, [("v1", v1_writes), ("v2", v2_writes)])
    ho = handover(run.history, ("v1", "v2"))
    assert ho is not None and ho.ran == ("v1", "v2") and ho.last == "v2"
    assert ho.cut == 6 and not ho.rolled_back  # v1 sealed steps 0-3; readings 5, 6 after


def test_a_slow_start_whose_alter_follows_the_cut_blames_nobody(tmp_path: Path) -> None:
    """Readings of an unchanged upper while release 2 starts put the cut before its first
    step, whose ``ADD COLUMN`` rewrites every row: a row only release 1 wrote (``z``) holds
    ``tier`` null as before, so it did not change there and either version may have written
    it."""
    run = run_of(tmp_path, [("v1", v1_writes), ("v2", v2_writes)], idle=2, alter=True)
    ho = handover(run.history, ("v1", "v2"))
    assert ho is not None and ho.cut == 4  # the second reading after v1's exit: still 4
    assert verdicts(run) == ALL_VALID


def test_a_backfill_credited_to_the_step_before_release_2_started_is_explained(
    tmp_path: Path,
) -> None:
    """Release 2's backfill of ``tier`` (its ``migrate``), committed outside any batch, lands
    in release 1's last step: the rows it rewrote read as release 2 reads release 1's."""

    @dataclass(frozen=True)
    class Backfilled(Accounts):
        def migrate(self, row: Any, version: str) -> dict[str, Any]:
            return {**row, "tier": tier(row["amount"])}

    plan = [("v1", v1_writes), ("v2", v2_writes)]
    run = run_of(tmp_path, plan, backfill=True, job=Backfilled())
    res = run_checkers(run).checkers["versions"]
    assert res.valid is True, res.anomalies[:1]
    assert res.counts["earlier_states_judged"] > 0


def test_a_run_that_never_upgraded_reads_rows_as_its_version_writes_them(tmp_path: Path) -> None:
    """With a ``migrate`` that backfills, a run that stayed on v1 is judged by v1's rows as v1
    reads them (``tier`` null), not as v2 would after migrating them."""

    @dataclass(frozen=True)
    class Backfilled(Accounts):
        def migrate(self, row: Any, version: str) -> dict[str, Any]:
            return {**row, "tier": tier(row["amount"])}

    assert verdicts(run_of(tmp_path, [("v1", v1_writes)], job=Backfilled())) == ALL_VALID


def test_a_rollback_that_leaves_nothing_after_the_cut_is_unknown(tmp_path: Path) -> None:
    """v1, v2, v1, then a v2 that seals nothing: every key's row changed before any reading
    after v1's exit, so none can be judged, and the checker says so rather than valid."""
    plan = [("v1", v1_writes), ("v2", v2_writes), ("v1", v1_writes)]
    run = run_of(tmp_path, plan, steps_each=3, trailing="v2")
    res = run_checkers(run).checkers["versions"]
    assert res.applicable and res.valid is None and "no key" in (res.error or ""), res
    assert res.counts["keys_not_judged_rollback"] > 0


@dataclass(frozen=True)
class Renamed(Accounts):
    """Release 2 upper-cases keys: it differs outside the new column."""

    def effect(self, record: Record, version: str = "v1") -> Upsert | Delete:
        e = super().effect(record, version)
        if version == "v2" and isinstance(e, Upsert):
            return Upsert(str(e.key).upper(), e.row)
        return e


@dataclass(frozen=True)
class Doubled(Accounts):
    """Release 2 writes rows of release 1's shape, with another value."""

    def effect(self, record: Record, version: str = "v1") -> Upsert | Delete:
        e = super().effect(record, "v1")
        if version == "v2" and isinstance(e, Upsert) and isinstance(e.row, dict):
            return Upsert(e.key, {"amount": e.row["amount"] * 2})
        return e


@pytest.mark.parametrize(
    ("job", "said"),
    [
        (Renamed(), r"offset 0: v2's effect differs from v1's outside the columns"),
        (Doubled(), r"offset 0: v2's effect differs from v1's: versions"),
    ],
    ids=["other-keys", "one-shape-other-value"],
)
def test_versions_that_differ_outside_the_new_columns_are_refused(
    tmp_path: Path, job: Accounts, said: str
) -> None:
    write_topic([TopicRecord(0, 0, b"a", b'{"v": 1}')], tmp_path / "topic.parquet")
    versions = job.version_effects()
    assert versions is not None
    with pytest.raises(EffectError, match=said):
        write_version_effects(
            tmp_path / "topic.parquet", versions, tmp_path / "e.parquet", tmp_path / "v.parquet"
        )
    assert not (tmp_path / "v.parquet").exists()


def test_a_descriptor_without_a_version_parameter_maps_every_version_alike() -> None:
    @dataclass(frozen=True)
    class OneShape(Accounts):
        def effect(self, record: Record) -> Upsert | Delete:  # type: ignore[override]
            return super().effect(record)

    assert OneShape().version_effects() is None
    assert OneShape().effect_mapping() is not None
    first = Accounts().effect_mapping()
    assert first is not None and first(Record(0, 0, b"a", b'{"v": 2}')) == Upsert(
        "a", {"amount": 2}
    )


def test_migrate_says_how_an_old_row_reads(tmp_path: Path) -> None:
    """A release 2 that backfills ``tier`` for old rows states it with ``migrate``."""

    @dataclass(frozen=True)
    class Backfilled(Accounts):
        def migrate(self, row: Any, version: str) -> dict[str, Any]:
            return {**row, "tier": tier(row["amount"])}

    write_topic([TopicRecord(0, 0, b"a", b'{"v": 3}')], tmp_path / "topic.parquet")
    versions = Backfilled().version_effects()
    assert isinstance(versions, VersionEffects) and versions.migrate is not None
    write_version_effects(
        tmp_path / "topic.parquet", versions, tmp_path / "e.parquet", tmp_path / "v.parquet"
    )
    got = pl.read_parquet(tmp_path / "v.parquet").select("version", "to", "value").rows()
    assert got == [
        ("v1", "v1", b'{"tier":null}'),  # as v1 reads it: the run ended on v1
        ("v1", "v2", b'{"tier":"odd"}'),  # as v2 reads it, migrated
        ("v2", "v2", b'{"tier":"odd"}'),
    ]
    meta = pq.read_schema(tmp_path / "v.parquet").metadata or {}
    assert json.loads(meta[b"sealcheck.versioned_columns"]) == ["tier"]


def test_an_update_of_the_new_column_alone_leaves_the_shared_updates(tmp_path: Path) -> None:
    old, new = encode_row({"amount": 1, "tier": None}), encode_row({"amount": 1, "tier": "odd"})
    key = encode_key("a")
    rows = [("data", key, old, 0, 1), ("data", key, old, 1, -1), ("data", key, new, 1, 1)]
    write_export(tmp_path, {"data": {"upper": 2, "since": 0}}, [rows])
    split_export(tmp_path, ("tier",))
    shared = pl.read_parquet(tmp_path / UPDATES).select("value", "ts", "diff").rows()
    assert shared == [(b'{"amount":1}', 0, 1)]  # the -1/+1 of step 1 cancel out
    extra = sorted(pl.read_parquet(tmp_path / VERSIONED).select("value", "ts", "diff").rows())
    assert extra == [(b'{"tier":"odd"}', 1, 1), (b'{"tier":null}', 0, 1), (b'{"tier":null}', 1, -1)]
