"""Checkers run two at a time (``sealcheck.checkers.registry.JUDGES``): a derived frame is
computed once however many ask for it at once, results come in the order asked for, and the
verdicts are those of the checkers run one by one."""

from __future__ import annotations

import threading

import polars as pl
import pytest

from sealcheck.checkers import CHECKERS, run_checkers
from sealcheck.checkers import registry as registry_mod
from sealcheck.checkers.inputs import RunData
from sealcheck.checkers.result import CheckResult
from tests.runs import build_run

PAIRS = [(b"k%d" % (i % 9), b'{"v": %d}' % i) for i in range(60)] + [(None, b"1"), (b"x", b"{")]


def test_a_frame_asked_for_by_two_threads_at_once_is_computed_once() -> None:
    run = build_run(PAIRS)
    inside, release = threading.Event(), threading.Event()
    calls: list[str] = []
    got: dict[str, pl.DataFrame] = {}

    def compute() -> pl.DataFrame:
        calls.append(threading.current_thread().name)
        inside.set()
        release.wait(30)
        return pl.DataFrame({"x": [1]})

    def ask(name: str) -> None:
        got[name] = run._once("test", compute)

    first = threading.Thread(target=ask, args=("first",), name="first")
    first.start()
    assert inside.wait(30)
    second = threading.Thread(target=ask, args=("second",), name="second")
    second.start()
    second.join(0.5)  # without the lock it would compute too, meanwhile
    release.set()
    first.join(30)
    second.join(30)
    assert calls == ["first"]
    assert got["first"] is got["second"]


def test_results_come_in_the_order_asked_and_match_one_by_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    both = run_checkers(build_run(PAIRS))
    assert list(both.checkers) == list(CHECKERS)  # prefix is started first, listed last
    monkeypatch.setattr(registry_mod, "JUDGES", 1)
    alone = run_checkers(build_run(PAIRS))
    assert {n: (r.valid, r.anomaly_counts) for n, r in both.checkers.items()} == {
        n: (r.valid, r.anomaly_counts) for n, r in alone.checkers.items()
    }
    assert both.valid is True


def test_a_checker_that_raises_beside_another_is_unknown_and_the_rest_judged(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def boom(run: RunData) -> CheckResult:
        raise RuntimeError("seeded")

    monkeypatch.setattr(registry_mod, "CHECKERS", {**CHECKERS, "unique_key": boom})
    res = run_checkers(build_run(PAIRS))
    assert res.checkers["unique_key"].valid is None
    assert "RuntimeError: seeded" in (res.checkers["unique_key"].error or "")
    assert res.checkers["prefix"].valid is True
    assert res.valid is None
