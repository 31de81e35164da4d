"""Checkers run two at a time (``sealcheck.checkers.registry.JUDGES``): a derived frame is
computed once however many ask for it at once, results come in the order asked for, and the
verdicts are those of the checkers run one by one."""

from __future__ import annotations

import _thread
import signal
import threading
from collections.abc import Callable

import polars as pl
import pytest

from sealcheck.checkers import CHECKERS, run_checkers
from sealcheck.checkers import registry as registry_mod
from sealcheck.checkers.inputs import RunData
from sealcheck.checkers.result import CheckResult, RunResult
from tests.runs import build_run, with_updates

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


def _seen(res: RunResult) -> dict[str, object]:
    return {
        n: (r.valid, r.anomaly_counts, r.counts, r.error, [a.key for a in r.anomalies])
        for n, r in res.checkers.items()
    }


@pytest.mark.parametrize("broken", [False, True])
def test_results_come_in_the_order_asked_and_match_one_by_one(
    monkeypatch: pytest.MonkeyPatch, broken: bool
) -> None:
    def build() -> RunData:
        run = build_run(PAIRS)
        if not broken:
            return run
        extra = run.updates.lazy().collect().filter(pl.col("collection") == "data").head(3)
        return with_updates(run, pl.concat([run.updates.lazy().collect(), extra]))

    both = run_checkers(build())
    assert list(both.checkers) == list(CHECKERS)  # prefix is started first, listed last
    assert both.valid is (not broken)
    monkeypatch.setattr(registry_mod, "JUDGES", 1)  # one by one, on this thread
    assert _seen(run_checkers(build())) == _seen(both)


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


def test_ctrl_c_stops_at_once_and_starts_no_other_checker(monkeypatch: pytest.MonkeyPatch) -> None:
    release = threading.Event()
    entered: dict[str, threading.Event] = {n: threading.Event() for n in CHECKERS}

    def stuck(name: str) -> Callable[[RunData], CheckResult]:
        def check(run: RunData) -> CheckResult:
            entered[name].set()
            release.wait(60)  # numpy at scale: not interruptible
            return CheckResult(name, True)

        return check

    monkeypatch.setattr(registry_mod, "CHECKERS", {n: stuck(n) for n in CHECKERS})
    run = build_run(PAIRS)
    sent = threading.Event()

    def interrupt() -> None:  # once both judges are inside a checker (bounded for a hung run)
        if entered["prefix"].wait(300) and entered["diff_of_one"].wait(300):
            sent.set()
            _thread.interrupt_main()

    # Ctrl-C as Python's default handler takes it, whatever an earlier test in this worker set
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    threading.Thread(target=interrupt, daemon=True).start()
    stopped = False
    try:
        run_checkers(run)
    except KeyboardInterrupt:
        stopped = not release.is_set()  # while both checkers were still running
    finally:
        release.set()
        signal.signal(signal.SIGINT, previous)
    assert stopped, f"no Ctrl-C while judging (sent: {sent.is_set()}; handler was {previous})"
    for thread in [t for t in threading.enumerate() if t.name == "checker"]:
        thread.join(30)
    assert {n for n, e in entered.items() if e.is_set()} == {"prefix", "diff_of_one"}
