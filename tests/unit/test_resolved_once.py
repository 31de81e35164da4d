"""A test loaded from a config and flags builds its system once (issue 51): the config reads
the system's run defaults from the system it builds, and the test is built with that one —
a user's factory with side effects (a connection, a log line) runs once per load."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from sealcheck.harness.run.test import load_test

FACTORY = """
from sealcheck.systems.upsert_source import UpsertSource

BUILT = []

def make(**options):
    BUILT.append(options)
    return UpsertSource(**options)
"""


@pytest.fixture
def counting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[object]]:
    (tmp_path / "counting_factory.py").write_text(FACTORY)
    monkeypatch.syspath_prepend(str(tmp_path))
    import counting_factory  # type: ignore[import-not-found]

    yield counting_factory.BUILT
    del sys.modules["counting_factory"]


def test_load_test_builds_the_named_system_once(counting: list[object]) -> None:
    test = load_test(None, {"system": "counting_factory:make", "nemeses": ["kill"]})
    assert len(counting) == 1
    assert type(test.system).__name__ == "UpsertSource"
