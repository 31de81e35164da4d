"""Where a system under test's output is, and how the harness reads it back: an
:class:`Output` says how far the system has sealed and exports what it wrote into the checkers'
format, from outside the system (files, tables, logs), never through the engine under test.

* :class:`~sealcheck.systems.outputs.delta.DeltaOutput`: a Structured Streaming query's
  checkpoint and its Delta tables (change data feed).
* :class:`~sealcheck.systems.outputs.sql.SQLiteOutput`: tables in a SQLite database that keep no
  bindings, snapshotted by the harness while the run goes on and judged by ``prefix``;
* :class:`~sealcheck.systems.outputs.postgres.PostgresOutput`: the same for PostgreSQL tables;
* :class:`~sealcheck.systems.outputs.topic.TopicOutput`: Kafka topics of upserts (a compacted
  output topic), their prefixes taken between the job's batches.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from sealcheck.systems.api import Progress
from sealcheck.systems.outputs.delta import DeltaOutput
from sealcheck.systems.outputs.postgres import PostgresOutput
from sealcheck.systems.outputs.sql import SQLiteOutput
from sealcheck.systems.outputs.topic import TopicOutput

__all__ = ["DeltaOutput", "Output", "PostgresOutput", "SQLiteOutput", "TopicOutput"]


class Output(Protocol):
    """A system's output as the harness reads it, independently of the system."""

    def uppers(self) -> dict[str, int] | None:
        """Its collections' uppers now (``bindings``, ``data``, ``errors``; sampled 4 times a
        second); None while nothing was written yet or it cannot be read."""

    def progress(self) -> Progress | None:
        """Its uppers and the offsets bound by its last sealed step (None while unreadable)."""

    def export(self, run_dir: Path) -> None:
        """Write what it holds into ``run_dir`` in the checkers' format
        (:func:`sealcheck.rundir.files.write_export`). An output observed from outside also
        offers ``capture`` (:class:`sealcheck.systems.api.CapturesSteps`): the states it took
        while the run went on, kept as they are taken."""
