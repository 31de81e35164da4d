"""as_of: snapshots of the store as of a step are compared with the model there."""

from __future__ import annotations

import dataclasses

import polars as pl
import pytest

from sealcheck.checkers import run_checkers
from sealcheck.checkers.inputs import RunData
from tests.runs import build_run
from tests.unit.test_checkers import PAIRS


def snapshot(run: RunData, name: str, ts: int) -> pl.DataFrame:
    """The collection's consolidated contents after step ``ts``, read from the exported
    updates (what a correct as-of read returns)."""
    upd = (
        pl.DataFrame(run.updates)
        if isinstance(run.updates, pl.DataFrame)
        else run.updates.collect()
    )
    live = (
        upd.filter((pl.col("collection") == name) & (pl.col("ts") <= ts))
        .group_by("key", "value")
        .agg(pl.col("diff").sum())
        .filter(pl.col("diff") > 0)
    )
    return live.select(
        pl.lit(name).alias("collection"), pl.lit(ts, pl.Int64).alias("ts"), "key", "value"
    )


@pytest.fixture
def run() -> RunData:
    return build_run(PAIRS, partitions=2, step_size=5)


def test_without_snapshots_it_is_not_applicable(run: RunData) -> None:
    res = run_checkers(run, ["as_of"]).checkers["as_of"]
    assert not res.applicable and res.valid is None and res.counts["snapshots_judged"] == 0
    assert res.word() == "not applicable" and "asof.parquet" in str(res.error)


def test_correct_snapshots_are_valid(run: RunData) -> None:
    snaps = pl.concat([snapshot(run, n, t) for n in ("data", "errors") for t in (0, 3, 5)])
    res = run_checkers(dataclasses.replace(run, asof=snaps), ["as_of"]).checkers["as_of"]
    assert res.valid is True, res.anomalies
    assert res.counts["snapshots_judged"] == 6


def test_a_snapshot_with_a_wrong_value_is_caught_at_its_step(run: RunData) -> None:
    good = snapshot(run, "data", 3)
    victim = good["key"][0]
    bad = good.with_columns(
        pl.when(pl.col("key") == victim)
        .then(pl.lit(b'{"v": 999}'))
        .otherwise("value")
        .alias("value")
    )
    snaps = pl.concat([snapshot(run, "data", 1), bad])
    res = run_checkers(dataclasses.replace(run, asof=snaps), ["as_of"]).checkers["as_of"]
    assert res.valid is False
    (a,) = res.anomalies
    assert (a.kind, a.collection, a.step, a.key) == ("asof-mismatch", "data", 3, victim.decode())
    assert a.found == '{"v": 999}' and a.expected != a.found


def test_a_snapshot_missing_a_key_is_caught(run: RunData) -> None:
    good = snapshot(run, "errors", 5)
    snaps = good.slice(1)
    res = run_checkers(dataclasses.replace(run, asof=snaps), ["as_of"]).checkers["as_of"]
    assert res.valid is False
    assert res.anomalies[0].found is None and res.anomalies[0].step == 5


def test_an_anomaly_names_the_batch_and_the_table_versions_of_its_step(run: RunData) -> None:
    good = snapshot(run, "data", 3)
    bad = good.filter(pl.col("key") != good["key"][0])  # a key missing as of step 3
    names = {3: "batch 3: data v4, errors v4"}
    judged = dataclasses.replace(run, asof=bad, step_names=names)
    res = run_checkers(judged, ["as_of"]).checkers["as_of"]
    assert res.valid is False
    assert {a.context.get("batch") for a in res.anomalies} == {names[3]}
