"""Variants of the job that people really write (``--variant NAME``), each one line away from
the correct job, with why people write it. ``docs/systems.md`` ("The delta-streaming job")
says what Sealcheck finds for each and under which fault.
"""

from __future__ import annotations

#: name -> (what differs, the line that differs, why people write it)
VARIANTS: dict[str, tuple[str, str, str]] = {
    "drop-duplicates": (
        "an arbitrary record per key wins the micro-batch instead of the one with the highest "
        "offset",
        'winners = batch.dropDuplicates(["key"])',
        "the most common way to make a MERGE source unique (MERGE fails when two source rows "
        "match one target row); it keeps whichever row Spark meets first",
    ),
    "no-tombstone-clause": (
        "tombstones are ignored: the MERGE has no DELETE clause, so a deleted key keeps its "
        "last value",
        "WHEN MATCHED AND s.op = 'delete' THEN DELETE  -- left out",
        "the MERGE is copied from a batch upsert that never saw deletes",
    ),
    "append-not-merge": (
        "the winners are appended to the data table (with the idempotent-write options) "
        "instead of MERGEd into it",
        'rows.write.format("delta").mode("append").option("txnAppId", app).option('
        '"txnVersion", batch_id).save(data)',
        "the Delta docs' foreachBatch example for idempotent writes is an append",
    ),
    "no-idempotent-writes": (
        "the MERGEs carry no transaction identifiers, so a replayed micro-batch is MERGEd again",
        'spark.conf.set("spark.databricks.delta.write.txnVersion", batch_id)  -- left out',
        "foreachBatch examples rarely show the txn options, and MERGE looks idempotent",
    ),
    "unrelated-errors-query": (
        "bad records go to the errors table from a second streaming query with its own "
        "checkpoint (and its own batch size: half), so the two tables are committed by "
        "unrelated micro-batches",
        'source.writeStream.foreachBatch(merge_errors).option("checkpointLocation", '
        "checkpoint + '-errors').start()",
        "one query per sink is the usual way to feed a dead-letter table",
    ),
}
