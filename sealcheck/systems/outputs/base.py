"""The base of every output: what the harness calls on a system's output, with a default for
each member a kind of output may not need, so a new kind of output is one subclass that
defines :meth:`Output.uppers`, :meth:`Output.progress` and :meth:`Output.export`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from sealcheck.rundir.captures import Capture
from sealcheck.rundir.states import Checkpoint
from sealcheck.systems.api import Progress


class Output:
    """A system's output as the harness reads it, independently of the system: how far it
    has sealed (:meth:`uppers`, :meth:`progress`) and what it wrote (:meth:`export`).

    The other members have defaults. An output observed from outside (tables that keep no
    bindings) takes states while the run goes on: it gives them in :meth:`capture`, may take
    them only between the job's batches (:attr:`between_batches`, told by the callable given
    to :meth:`watch_batches`), may record the job's batches at each (:meth:`watch_checkpoint`)
    and may hold a connection to :meth:`close`."""

    #: its states mean something only between the job's batches (a sink that commits a batch
    #: in several transactions): the harness then calls :meth:`watch_batches`
    between_batches: bool = False

    def uppers(self) -> dict[str, int] | None:
        """Its collections' uppers now (``bindings``, ``data``, ``errors``; sampled 4 times a
        second); None while nothing was written yet or it cannot be read."""
        raise NotImplementedError(f"{type(self).__name__} does not define uppers()")

    def progress(self) -> Progress | None:
        """Its uppers and the offsets bound by its last sealed step (None while unreadable;
        an output without bindings gives ``Progress(uppers, {}, settle_s=...)``)."""
        raise NotImplementedError(f"{type(self).__name__} does not define progress()")

    def export(self, run_dir: Path) -> None:
        """Write what it holds into ``run_dir`` in the checkers' format
        (:func:`sealcheck.rundir.files.write_export`)."""
        raise NotImplementedError(f"{type(self).__name__} does not define export()")

    def capture(self, since_captured: dict[str, int]) -> Capture | None:
        """The states it took since the last capture (``since_captured``: each collection's
        upper already captured), kept as they are taken; None (the default): it keeps its own
        steps apart, as Delta does (:class:`sealcheck.systems.api.CapturesSteps`)."""
        return None

    def watch_batches(self, boundary: Callable[[], str | None]) -> None:
        """With :attr:`between_batches`: take states only when ``boundary()`` names the batch
        the job is between (None while a batch is in flight). The default takes none."""
        return None

    def watch_checkpoint(self, checkpoint: Checkpoint) -> None:
        """Record at each state the job's newest committed and planned batches, as its
        ``checkpoint`` tells. The default records none."""
        return None

    def close(self) -> None:
        """Let go of what it holds (a connection) at the end of the run. The default holds
        nothing."""
        return None


class Plain(Output):
    """An object with :meth:`~Output.uppers`, :meth:`~Output.progress` and
    :meth:`~Output.export` that does not subclass :class:`Output` (written to the protocol of
    earlier versions), taken as an output with the defaults for the rest."""

    def __init__(self, inner: object) -> None:
        self.inner: Any = inner

    def uppers(self) -> dict[str, int] | None:
        """The object's uppers."""
        found: dict[str, int] | None = self.inner.uppers()
        return found

    def progress(self) -> Progress | None:
        """The object's progress."""
        found: Progress | None = self.inner.progress()
        return found

    def export(self, run_dir: Path) -> None:
        """The object's export."""
        self.inner.export(run_dir)
