"""SIGTERM stops a run cleanly: raised in the main thread like Ctrl-C, but a teardown under way
runs every step before it is raised again, and a second SIGTERM does not cut it short."""

from __future__ import annotations

import os
import signal
import time

import pytest

from sealcheck.harness.run.progress import Display
from sealcheck.harness.run.session import Teardown
from sealcheck.harness.run.signals import Terminated, on_sigterm


def test_a_teardown_finishes_every_step_then_raises_the_stop() -> None:
    done: list[str] = []
    teardown = Teardown(Display(enabled=False))
    teardown.push("stop kafka", lambda: done.append("kafka"))

    def stopped_midway() -> None:
        raise Terminated

    teardown.push("stop the job", stopped_midway)
    teardown.push("stop the producers", lambda: done.append("producers"))
    with pytest.raises(Terminated):
        teardown.run()
    assert done == ["producers", "kafka"]


def test_the_first_sigterm_raises_and_the_next_are_ignored() -> None:
    before = signal.getsignal(signal.SIGTERM)
    try:
        on_sigterm()
        with pytest.raises(Terminated):
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # raised at once: the handler runs in this (the main) thread
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_IGN
        os.kill(os.getpid(), signal.SIGTERM)  # ignored: nothing raised
    finally:
        signal.signal(signal.SIGTERM, before)
