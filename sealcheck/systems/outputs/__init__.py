"""Where a system under test's output is, and how the harness reads it back: an
:class:`Output` says how far the system has sealed and exports what it wrote into the checkers'
format, from outside the system (files, tables, logs), never through the engine under test.
Each is an :class:`~sealcheck.systems.outputs.base.Output`; a new kind is one subclass of it.

* :class:`~sealcheck.systems.outputs.delta.DeltaOutput`: a Structured Streaming query's
  checkpoint and its Delta tables (change data feed).
* :class:`~sealcheck.systems.outputs.sql.SQLiteOutput`: tables in a SQLite database that keep no
  bindings, snapshotted by the harness while the run goes on and judged by ``prefix``;
* :class:`~sealcheck.systems.outputs.postgres.PostgresOutput`: the same for PostgreSQL tables;
* :class:`~sealcheck.systems.outputs.topic.TopicOutput`: Kafka topics of upserts (a compacted
  output topic), their prefixes taken between the job's batches.
"""

from __future__ import annotations

from sealcheck.systems.outputs.base import Output
from sealcheck.systems.outputs.delta import DeltaOutput
from sealcheck.systems.outputs.postgres import PostgresOutput
from sealcheck.systems.outputs.sql import SQLiteOutput
from sealcheck.systems.outputs.topic import TopicOutput

__all__ = ["DeltaOutput", "Output", "PostgresOutput", "SQLiteOutput", "TopicOutput"]
