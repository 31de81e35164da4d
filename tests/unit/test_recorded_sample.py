"""A recorded sample as the workload (:mod:`sealcheck.harness.run.sample`): read from JSON lines
or Parquet; each writer replays it in order from a place its seed draws; keys remapped onto the
run's key space by rank (the sample's hottest keys stay hot, deletes stay deletes); pinned by
its SHA-256, so a replay with another file is refused; a file that cannot be read is one line."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sealcheck.harness.run.config import ConfigError, load_config
from sealcheck.harness.run.sample import load_sample
from sealcheck.harness.run.test import build_test
from sealcheck.harness.run.tried import sample_records
from sealcheck.harness.run.workload import BAD, TOMBSTONE, UPSERT, UpsertMix, writer_records

LINES = [
    {"key": "acct-7", "value": '{"bal": 10}', "headers": {"src": "atm"}},
    {"key": "acct-7", "value": '{"bal": 12}'},
    {"key": "acct-9", "value": '{"bal": 1}'},
    {"key": "acct-3", "value": '{"bal": 5}'},
    {"key": "acct-7", "value": None},
    {"key": None, "value": "garbage"},
    {"key": "acct-9", "value": '{"bal": 2}'},
]


def _jsonl(tmp_path: Path, lines: list[object] = LINES) -> Path:
    path = tmp_path / "prod.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def test_keys_are_ranked_by_how_often_they_occur_and_remapped_onto_the_key_space(
    tmp_path: Path,
) -> None:
    sample = load_sample(_jsonl(tmp_path))
    assert list(sample.ranked) == [b"acct-7", b"acct-9", b"acct-3"]
    assert sample.records[0].headers == (("src", b"atm"),)
    two = list(itertools.islice(sample.replay(seed=1, keys=2), 14))
    assert {r.key for r in two} == {b"acct-7", b"acct-9", None}  # acct-3 (rank 2) -> acct-7
    assert [r.value for r in two[:7]] == [r.value for r in two[7:]]  # cyclic, in order
    values = [x["value"] for x in LINES]
    start = values.index(two[0].value.decode() if two[0].value else None)
    assert [r.value for r in two[:7]] == [
        v if v is None else v.encode() for v in values[start:] + values[:start]
    ]


def test_each_writer_replays_from_a_place_its_seed_draws_and_kinds_follow_the_records(
    tmp_path: Path,
) -> None:
    sample = load_sample(_jsonl(tmp_path))
    mix = UpsertMix(keys=10)
    a = list(itertools.islice(writer_records(11, mix, "w0", sample=sample), 20))
    assert a == list(itertools.islice(writer_records(11, mix, "w0", sample=sample), 20))
    starts = {next(writer_records(s, mix, "w0", sample=sample))[1].value for s in range(40)}
    assert len(starts) > 3  # seeds start at different places
    kinds = {what for what, _ in a}
    assert kinds == {UPSERT, TOMBSTONE, BAD}


def test_a_parquet_sample_reads_as_a_run_s_topic_dump_does(tmp_path: Path) -> None:
    path = tmp_path / "topic.parquet"
    pq.write_table(
        pa.table({"partition": [0, 0], "offset": [0, 1], "key": [b"k1", b"k2"],
                  "value": [b"v", None]}), path)  # fmt: skip
    sample = load_sample(path)
    assert [(r.key, r.value) for r in sample.records] == [(b"k1", b"v"), (b"k2", None)]


def test_the_sample_is_pinned_by_its_digest_and_a_changed_one_is_refused(tmp_path: Path) -> None:
    path = _jsonl(tmp_path)
    test = build_test(load_config(None, {"nemeses": ["kill"], "workload": {"sample": str(path)}}))
    pinned = test.spec.workload.sample_sha256
    assert len(pinned) == 64 and test.spec.workload.sample == str(path.absolute())
    records = list(sample_records(test.spec.workload, test.producer_seeds, 3))
    assert {r.key for r in records} <= {b"acct-7", b"acct-9", b"acct-3", None}
    _jsonl(tmp_path, LINES[:3])  # the file changed since
    again = {"nemeses": ["kill"], "workload": {"sample": str(path), "sample_sha256": pinned}}
    with pytest.raises(ConfigError, match="changed since the run was made"):
        build_test(load_config(None, again))


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("not json\n", "line 1 is not JSON"),
        ('{"key": "a"}\n', 'line 1: give an object with "key" and "value"'),
        ('{"key": 5, "value": "x"}\n', "line 1 key is int: give text, bytes or null"),
        ("", "holds no records"),
    ],
)
def test_a_sample_that_cannot_be_read_is_one_line(tmp_path: Path, text: str, fragment: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        build_test(load_config(None, {"nemeses": ["kill"], "workload": {"sample": str(path)}}))
    assert fragment in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(ConfigError, match="is not a file"):
        build_test(load_config(None, {"workload": {"sample": str(tmp_path / "none.jsonl")}}))


def test_parquet_headers_come_back_and_malformed_ones_are_one_line(tmp_path: Path) -> None:
    header = pa.list_(pa.struct([("name", pa.string()), ("value", pa.binary())]))
    path = tmp_path / "topic.parquet"
    table = pa.table(
        {"key": [b"k1"], "value": [b"v"], "headers": [[{"name": "src", "value": b"atm"}]]},
        pa.schema([("key", pa.binary()), ("value", pa.binary()), ("headers", header)]),
    )
    pq.write_table(table, path)
    assert load_sample(path).records[0].headers == (("src", b"atm"),)
    wrong = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
    pq.write_table(
        pa.table({"key": [b"k1"], "value": [b"v"], "headers": [[{"key": "src", "value": b"x"}]]},
                 pa.schema([("key", pa.binary()), ("value", pa.binary()), ("headers", wrong)])),
        path,
    )  # fmt: skip
    with pytest.raises(ConfigError) as info:
        build_test(load_config(None, {"nemeses": ["kill"], "workload": {"sample": str(path)}}))
    assert "row 0 headers" in str(info.value) and "text `name`" in str(info.value)
    assert "\n" not in str(info.value)
