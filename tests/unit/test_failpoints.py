import pytest

from pipeline import failpoints
from pipeline.failpoints import FailpointError, FailpointSpecError, parse


def test_parse_actions_and_hits() -> None:
    armed = parse("data.mid_append=crash@3; compact.mid=sleep(25);rehydrate.mid=error")
    assert (armed["data.mid_append"].action, armed["data.mid_append"].hit) == ("crash", 3)
    assert (armed["compact.mid"].action, armed["compact.mid"].sleep_ms) == ("sleep", 25)
    assert armed["rehydrate.mid"].hit == 1


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ("nope=crash", "unknown failpoint 'nope'"),
        ("data.mid_append=explode", "is not name=action"),
        ("data.mid_append=crash@0", "at least 1"),
    ],
)
def test_bad_specs_name_the_entry(spec: str, fragment: str) -> None:
    with pytest.raises(FailpointSpecError, match=fragment):
        parse(spec)


def test_fires_once_on_the_configured_pass() -> None:
    failpoints.arm("compact.mid=error@2")
    try:
        failpoints.failpoint("compact.mid")
        with pytest.raises(FailpointError, match="pass 2"):
            failpoints.failpoint("compact.mid")
        failpoints.failpoint("compact.mid")  # fired already
        failpoints.failpoint("data.mid_append")  # not armed
    finally:
        failpoints.arm("")
