import random

import pytest

from sealcheck.harness.run.workload import UpsertMix, upsert_records


def test_same_seed_same_records_other_seed_other_records() -> None:
    mix = UpsertMix(keys=20, tombstone_ratio=0.2, bad_ratio=0.2)
    assert upsert_records(random.Random(7), 200, mix) == upsert_records(random.Random(7), 200, mix)
    assert upsert_records(random.Random(7), 200, mix) != upsert_records(random.Random(8), 200, mix)


def test_mix_shapes_the_records() -> None:
    recs = upsert_records(
        random.Random(1), 2000, UpsertMix(keys=5, tombstone_ratio=0.5, bad_ratio=0.2)
    )
    assert {k for k, _ in recs if k is not None} <= {f"k{i}".encode() for i in range(5)}
    assert 800 < sum(v is None for _, v in recs) < 1200
    assert 100 < sum(k is None for k, _ in recs) < 300


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"keys": 0}, "keys=0 must be at least 1"),
        ({"tombstone_ratio": 1.5}, "tombstone_ratio=1.5 must be between 0 and 1"),
        ({"tombstone_ratio": 0.8, "bad_ratio": 0.5}, "exceeds 1"),
    ],
)
def test_bad_mix_names_the_value(kwargs: dict[str, float], fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment):
        UpsertMix(**kwargs)  # type: ignore[arg-type]
