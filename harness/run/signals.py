"""SIGTERM taken as a request to stop cleanly: raised in the main thread like Ctrl-C, so
whatever a run started is torn down before the command exits (a ``timeout``, a CI job's end,
``kill`` must not leave a paused JVM behind), and never cutting that teardown short."""

from __future__ import annotations

import signal


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread (:func:`on_sigterm`). A teardown under way finishes
    every step before it is raised again (:class:`sealcheck.harness.run.session.Teardown`)."""


def on_sigterm() -> None:
    """From now on the first SIGTERM raises :class:`Terminated` in the main thread; the ones
    after it are ignored (the teardown it started runs to its end)."""

    def terminated(signum: int, frame: object) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise Terminated

    signal.signal(signal.SIGTERM, terminated)
