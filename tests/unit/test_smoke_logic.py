import json

from sealcheck.harness.cli import smoke
from sealcheck.rundir.files import TopicRecord as Record


def test_offsets_json_is_what_spark_expects() -> None:
    text = smoke.offsets_json("t", {1: 5, 0: 3})
    assert json.loads(text) == {"t": {"0": 3, "1": 5}}


def test_end_offsets_is_one_past_the_highest() -> None:
    acked = [Record(0, 0, b"a", b"1"), Record(0, 4, b"a", b"2"), Record(2, 1, None, None)]
    assert smoke.end_offsets(acked) == {0: 5, 2: 2}
