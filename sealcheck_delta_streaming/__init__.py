"""A Spark Structured Streaming job of the kind Sealcheck's users run: Kafka → ``foreachBatch``
→ ``MERGE`` into Delta Lake (the ``delta-streaming`` system under test).

It reads ``(key, value | tombstone)`` records from Kafka with a checkpoint and
``maxOffsetsPerTrigger``, keeps per micro-batch the record with the highest offset per raw key,
``MERGE``s the winners into a ``data`` Delta table (a tombstone deletes the key) and bad
records into an ``errors`` Delta table, each ``MERGE`` made idempotent by Delta's transaction
identifiers (app id + batch id). It depends on nothing of Sealcheck but its failpoint hook
(:mod:`sealcheck_delta_streaming.failpoints`); ``docs/systems.md`` ("The delta-streaming job")
maps it onto
the design's bindings, data and errors collections.
"""
