"""The ``prefix`` checker on whole runs (:mod:`sealcheck.checkers.prefix.check`): valid on a
correct run, and each seeded violation caught with an explanation a person acts on."""

from __future__ import annotations

import polars as pl

from sealcheck.checkers import run_checkers
from tests.runs import build_run, with_updates

# one partition, steps of two records: a=1 a=2 | b=1 a=3 | c=1 b=2
PAIRS = [
    (b"a", b'{"v": 1}'),
    (b"a", b'{"v": 2}'),
    (b"b", b'{"v": 1}'),
    (b"a", b'{"v": 3}'),
    (b"c", b'{"v": 1}'),
    (b"b", b'{"v": 2}'),
]


def test_a_correct_run_is_valid_state_by_state():
    res = run_checkers(build_run(PAIRS, partitions=1, step_size=2), ["prefix"])
    prefix = res.checkers["prefix"]
    assert prefix.valid is True, prefix.anomalies
    assert prefix.counts["data_states_judged"] == prefix.counts["data_states_explained"] == 3


def test_a_lost_update_is_named_by_the_two_keys_no_prefix_explains():
    run = build_run(PAIRS, partitions=1, step_size=2)
    # step 1 loses the update of a to 3 (its retraction of 2 and its insert of 3): step 1
    # still has a prefix (a=2 holds through offset 2, b=1 was written at offset 2); step 2
    # shows a=2 beside b=2 (offset 5), which needs a cut past a's overwrite (offset 3)
    lost = (pl.col("collection") == "data") & (pl.col("key") == b"a") & (pl.col("ts") == 1)
    res = run_checkers(with_updates(run, run.updates.filter(~lost)), ["prefix"])
    prefix = res.checkers["prefix"]
    assert prefix.valid is False
    assert prefix.anomaly_counts["no-prefix"] == 1
    [found] = [a for a in prefix.anomalies if a.kind == "no-prefix"]
    assert found.step == 2 and found.collection == "data"
    assert found.detail == (
        "a shows the value written at offset 1, overwritten at offset 3; b shows the value "
        "written at offset 5: no prefix of partition 0 reaching at least offset 2 (as the "
        "previous state) explains both"
    )
    assert prefix.anomaly_counts["not-the-whole-input"] == 1


def test_a_value_no_record_wrote_and_a_key_no_record_has():
    run = build_run(PAIRS, partitions=1, step_size=2)
    extra = pl.DataFrame(
        {
            "collection": ["data", "data", "data"],
            "key": [b"c", b"c", b"zz"],
            "value": [b'{"v": 1}', b'{"v": 9}', b"{}"],
            "ts": [2, 2, 2],
            "diff": [-1, 1, 1],
        },
        schema=run.updates.schema,
    )
    res = run_checkers(with_updates(run, pl.concat([run.updates, extra])), ["prefix"])
    prefix = res.checkers["prefix"]
    assert prefix.valid is False
    kinds = {a.kind: a for a in prefix.anomalies}
    assert kinds["no-prefix"].detail.startswith("c shows a value no record of it wrote")
    assert kinds["invented-key"].key == "zz" and kinds["invented-key"].step == 2


def test_tables_each_a_prefix_but_not_of_one_cut_are_not_aligned():
    # a's bad record (offset 2) puts an error in errors and deletes a from data, both at
    # step 1; the errors table is seeded one step late: each table alone is a prefix at every
    # step, both together at step 1 are not
    pairs = [(b"a", b'{"v": 1}'), (b"b", b'{"v": 1}'), (b"a", b"{nope"), (b"c", b'{"v": 1}')]
    pairs += [(b"d", b'{"v": 1}'), (b"e", b'{"v": 1}')]
    run = build_run(pairs, partitions=1, step_size=2)
    assert run_checkers(run, ["prefix"]).checkers["prefix"].valid is True
    late = pl.when(pl.col("collection") == "errors").then(pl.col("ts") + 1).otherwise("ts")
    res = run_checkers(with_updates(run, run.updates.with_columns(late.alias("ts"))), ["prefix"])
    prefix = res.checkers["prefix"]
    assert prefix.valid is False and set(prefix.anomaly_counts) == {"tables-not-aligned"}
    [found] = [a for a in prefix.anomalies if a.kind == "tables-not-aligned"]
    assert found.step == 1 and (found.collection, found.key) == ("data", "c")
    assert found.detail.startswith("data c shows the value written at offset 3; errors key:61 is")
    assert res.checkers["prefix"].counts["data_states_explained"] == 3
