"""A system under test the backend cannot start (here: its program does not exist) ends the
run UNKNOWN saying why — never VALID on nothing, never INVALID for a fault of the set-up — with
every start attempt and every skipped fault in the history, and nothing left running."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from sealcheck.harness.run.config import load_config
from sealcheck.harness.run.progress import Display
from sealcheck.harness.run.runner import run_test
from sealcheck.harness.run.test import build_test
from sealcheck.infra import cleanup
from sealcheck.systems.registry import system

pytestmark = pytest.mark.integration

MISSING = "/nonexistent/sealcheck-no-such-program"


class _Unstartable:
    """Our pipeline's deployment, except that its incarnations' program does not exist."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def launch(self, incarnation: int) -> Any:
        return dataclasses.replace(self.inner.launch(incarnation), program=(MISSING,))


class _System:
    """The pipeline's descriptor deploying :class:`_Unstartable`."""

    def __init__(self) -> None:
        self.inner = system("upsert-source")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def deploy(self, *args: Any) -> _Unstartable:
        return _Unstartable(self.inner.deploy(*args))


def test_an_unstartable_system_is_unknown_with_the_error(tmp_path: Path) -> None:
    cfg = load_config(
        None,
        {
            "name": "unstartable",
            "seed": 1,
            "spark": "local",  # no Spark Connect server to wait for
            "duration_s": 12.0,
            "nemesis_interval_s": 4.0,
            "nemeses": ["kill"],
            "runs_dir": str(tmp_path / "runs"),
        },
    )
    test = build_test(cfg, sut=_System())  # type: ignore[arg-type]
    assert test.schedule  # faults were planned ...
    with Display(live=False) as display:
        outcome = run_test(test, display)
    assert outcome.valid is None
    assert "could not be started (3 attempts)" in outcome.reason
    assert MISSING in outcome.reason
    results = json.loads((outcome.run_dir / "results.json").read_text())
    assert results["valid"] == "unknown"
    problems = results["inputs"]["problems"]
    assert any("could not be started" in p and "cannot be judged" in p for p in problems)
    ops = [json.loads(line) for line in (outcome.run_dir / "history.jsonl").open()]
    tries = [o for o in ops if o["f"] == "sut-start-failed"]
    assert [o["value"]["attempt"] for o in tries] == [1, 2, 3]
    assert not any(o["f"] == "sut-start" for o in ops)
    skipped = [o["value"] for o in ops if o["f"] == "outcome"]
    assert len(skipped) == len(test.schedule)  # ... and each says why it did not happen
    assert all(v["outcome"] == "skipped" for v in skipped)
    assert not [p for p in cleanup.leftovers() if p.run == str(outcome.run_dir)]
