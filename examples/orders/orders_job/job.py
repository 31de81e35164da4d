"""Keep the latest version of each order, read from a Kafka topic of Avro values, in Delta.

The checkout service writes each order's versions to the topic ``--topic``, keyed by the
order's id (``order-17``), its value an ``shop.Order`` (:mod:`orders_job.schema`) in
Confluent's wire format: a zero byte, the schema id in 4 bytes, the Avro body; a tombstone
(no value) cancels the order. The job reads the topic with Structured Streaming (checkpoint
under ``--dir``), strips the wire header, decodes the body with spark-avro's ``from_avro``
and, in ``foreachBatch``, MERGEs each order's last record of the batch (by offset) into the
Delta table ``orders``: a decoded order upserts the row (the amount as an exact decimal, the
time it was placed, the batch id and a load time), a tombstone deletes it. A value it cannot
decode (another magic byte or schema id, a body ``from_avro`` refuses) goes to the table
``rejected``, once, with the value in hexadecimal.

It knows nothing of any test harness: it is the job under test, as it would run in production.
"""

from __future__ import annotations

import argparse
import os
import signal
import time
from collections.abc import Sequence
from typing import Any

from orders_job.schema import ORDER_JSON, SCHEMA_ID

ORDERS = """
CREATE TABLE IF NOT EXISTS delta.`{path}`
(id STRING, customer STRING, amount DECIMAL(20, 4), placed TIMESTAMP, note STRING,
 revision BIGINT, batch_id BIGINT, updated_at TIMESTAMP)
USING delta TBLPROPERTIES (delta.enableChangeDataFeed = true)
"""
REJECTED = """
CREATE TABLE IF NOT EXISTS delta.`{path}`
(id STRING, partition INT, offset BIGINT, raw STRING, batch_id BIGINT, failed_at TIMESTAMP)
USING delta TBLPROPERTIES (delta.enableChangeDataFeed = true)
"""
UPSERT = """
MERGE INTO delta.`{path}` t USING latest s ON t.id = s.id
WHEN MATCHED AND s.deleted THEN DELETE
WHEN MATCHED AND NOT s.deleted {newer} THEN UPDATE SET customer = s.customer,
  amount = s.amount, placed = s.placed, note = s.note, revision = s.revision,
  batch_id = s.batch_id, updated_at = s.at
WHEN NOT MATCHED AND NOT s.deleted THEN
  INSERT (id, customer, amount, placed, note, revision, batch_id, updated_at)
  VALUES (s.id, s.customer, s.amount, s.placed, s.note, s.revision, s.batch_id, s.at)
"""
REJECT = """
MERGE INTO delta.`{path}` t USING bad s ON t.id = s.id
WHEN NOT MATCHED THEN INSERT (id, partition, offset, raw, batch_id, failed_at)
  VALUES (s.id, s.partition, s.offset, s.raw, s.batch_id, s.at)
"""


def session(jars: str) -> Any:
    """Spark in local mode with Delta, the Kafka connector and spark-avro."""
    from pyspark.sql import SparkSession

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    return (
        SparkSession.builder.master("local[2]")
        .appName("orders")
        .config("spark.driver.extraClassPath", jars)
        .config("spark.driver.memory", "1g")
        .config("spark.driver.extraJavaOptions", "-XX:+UseSerialGC -XX:TieredStopAtLevel=1")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.databricks.delta.snapshotPartitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
        .config(
            "spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog"
        )
        .getOrCreate()
    )


def decoded(batch: Any, batch_id: int, variant: str | None) -> tuple[Any, Any]:
    """A micro-batch as its rejected records and its orders: each record's decoded value
    (``deleted`` for a tombstone), the wire header checked and stripped."""
    from pyspark.sql import functions as F
    from pyspark.sql.avro.functions import from_avro

    value = F.col("value")
    header = F.concat(F.lit(b"\x00"), F.unhex(F.lit(f"{SCHEMA_ID:08x}")))
    wired = F.substring(value, 1, 5) == header
    body = F.expr("substring(value, 6, length(value) - 5)")
    order = from_avro(body, ORDER_JSON, {"mode": "PERMISSIVE"})
    amount = F.col("order.amount").cast("decimal(20,4)")
    if variant == "amount-through-double":  # the pricing step's Python float, in SQL
        amount = F.col("order.amount").cast("double").cast("decimal(20,4)")
    rows = (
        batch.select(
            F.col("key").cast("string").alias("id"),
            "partition",
            "offset",
            F.hex(value).alias("raw"),
            value.isNull().alias("deleted"),
            F.when(wired, order).alias("order"),
        )
        # from_avro gives a struct of nulls for a body it cannot decode: a revision is
        # never null in a decoded order
        .withColumn(
            "bad", F.col("id").isNull() | (~F.col("deleted") & F.col("order.revision").isNull())
        )
        .select(
            "id",
            "partition",
            "offset",
            "raw",
            "deleted",
            "bad",
            F.col("order.customer").alias("customer"),
            amount.alias("amount"),
            F.col("order.placed").alias("placed"),
            F.col("order.note").alias("note"),
            F.col("order.revision").alias("revision"),
            F.lit(batch_id).cast("bigint").alias("batch_id"),
            F.current_timestamp().alias("at"),
        )
    )
    position = F.concat_ws(":", "partition", "offset").alias("id")
    bad = rows.where("bad").select(position, "partition", "offset", "raw", "batch_id", "at")
    return bad, rows.where("NOT bad")


class WriteBatch:
    """``foreachBatch``: the batch's rejected records, then each order's last record of the
    batch, merged."""

    def __init__(self, root: str, variant: str | None) -> None:
        self.orders, self.rejected, self.variant = f"{root}/orders", f"{root}/rejected", variant
        # the bug: "the newest version wins" by the time an order was placed, not by the
        # topic's order: in the batch, and against the row already in the table
        self.by_event_time = variant == "newest-by-event-time"
        newer = "AND s.placed >= t.placed" if self.by_event_time else ""
        self.upsert = UPSERT.format(path=self.orders, newer=newer)

    def __call__(self, batch: Any, batch_id: int) -> None:
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        bad, orders = decoded(batch, batch_id, self.variant)
        newest = F.col("offset").desc()
        if self.by_event_time:
            newest = F.col("placed").desc()
        last = Window.partitionBy("id").orderBy(newest)
        latest = orders.withColumn("n", F.row_number().over(last)).where("n = 1")
        bad.createOrReplaceTempView("bad")
        latest.createOrReplaceTempView("latest")
        spark = batch.sparkSession
        spark.sql(REJECT.format(path=self.rejected))
        spark.sql(self.upsert)
        print(f"batch {batch_id} written", flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Run until SIGTERM."""
    p = argparse.ArgumentParser(prog="python -m orders_job")
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--topic", required=True)
    p.add_argument("--dir", required=True, help="the checkpoint and the tables live here")
    p.add_argument("--jars", default="", help="Kafka, Delta and spark-avro jars, ':'-separated")
    p.add_argument("--max-offsets", type=int, default=5000)
    p.add_argument("--variant", default=None)
    args = p.parse_args(argv)
    stop = {"asked": False}
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the JVM starts with SIGTERM ignored
    spark = session(args.jars)
    signal.signal(signal.SIGTERM, lambda *_: stop.update(asked=True))
    spark.sql(ORDERS.format(path=f"{args.dir}/orders"))
    spark.sql(REJECTED.format(path=f"{args.dir}/rejected"))
    query = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", args.bootstrap)
        .option("subscribe", args.topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", str(args.max_offsets))
        .load()
        .writeStream.foreachBatch(WriteBatch(args.dir, args.variant or None))
        .option("checkpointLocation", f"{args.dir}/checkpoint")
        .start()
    )
    while not stop["asked"] and query.isActive:
        time.sleep(0.2)
    if not query.isActive:
        print(f"query failed: {query.exception()}", flush=True)
        return 1
    while query.status["isTriggerActive"]:  # let the running batch finish
        time.sleep(0.1)
    query.stop()
    return 0
