"""Upsert a Kafka topic of JSON accounts into a Delta table, a micro-batch at a time.

The job reads the topic with Structured Streaming (checkpoint under ``--dir``) and, in
``foreachBatch``, keeps the last record of each key in the batch and MERGEs it into the Delta
table ``accounts``: a JSON object upserts the row (its fields ``i``, ``w``, ``p`` as columns,
with the batch id and a load time), a tombstone deletes it. Records it cannot use (no key, a
value that is not a JSON object) go to the table ``dead_letters``, once each, with the value as
``CAST(value AS STRING)`` gives it.

With ``--sink sqlite`` it writes the same two tables into the SQLite database
``accounts.db`` under ``--dir`` instead (WAL mode), one transaction per micro-batch (an upsert
or a delete per key, the dead letters appended), made idempotent by the table
``applied_batches``: the transaction records the batch id under the query's checkpoint, and a
batch found there — a batch Spark replays after a crash between the commit and the
checkpoint's ``commits/N`` — is skipped ("batch N already applied: skipped"). No change log,
no offsets table. With ``--sink postgres`` it writes them into the schema ``--schema`` of the
PostgreSQL database ``--dsn``, the same way; with ``--sink kafka``, into the compacted topics
``accounts-out`` and ``dead-letters-out`` of the same cluster (a tombstone for a delete).
``--release 2`` (Delta and SQLite) is the job's next release, :mod:`user_job.release2`: a column
more, the same checkpoint and tables.

It knows nothing of any test harness: it is the job under test, as it would run in production.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

ACCOUNTS = """
CREATE TABLE IF NOT EXISTS delta.`{path}`
(id STRING, i BIGINT, w STRING, p STRING, batch_id BIGINT, updated_at TIMESTAMP) USING delta
"""
DEAD_LETTERS = """
CREATE TABLE IF NOT EXISTS delta.`{path}`
(id STRING, partition INT, offset BIGINT, value STRING, batch_id BIGINT, failed_at TIMESTAMP)
USING delta
"""
UPSERT = """
MERGE INTO delta.`{path}` t USING latest s ON t.id = s.id
WHEN MATCHED AND s.deleted THEN DELETE
WHEN MATCHED AND NOT s.deleted THEN
  UPDATE SET i = s.i, w = s.w, p = s.p, batch_id = s.batch_id, updated_at = s.at
WHEN NOT MATCHED AND NOT s.deleted THEN
  INSERT (id, i, w, p, batch_id, updated_at) VALUES (s.id, s.i, s.w, s.p, s.batch_id, s.at)
"""
DEAD_LETTER = """
MERGE INTO delta.`{path}` t USING bad s ON t.id = s.id
WHEN NOT MATCHED THEN INSERT (id, partition, offset, value, batch_id, failed_at)
  VALUES (s.id, s.partition, s.offset, s.value, s.batch_id, s.at)
"""
# Delta's documentation's upsertToDelta (foreachBatch, "Upsert from streaming queries"), in SQL:
# whenMatchedUpdateAll / whenNotMatchedInsertAll, fed the batch as it came
AS_DOCUMENTED = """
MERGE INTO delta.`{path}` t USING updates s ON s.id = t.id
WHEN MATCHED THEN UPDATE SET *
WHEN NOT MATCHED THEN INSERT *
"""


def session(jars: str, master: str | None = None) -> Any:
    """Spark with Delta and the Kafka connector: in local mode, or as the driver of the
    standalone cluster ``master`` (two executors of one core, the jars at the same paths)."""
    from pyspark.sql import SparkSession

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.master(master or "local[2]")
    if master is not None:  # executors need the connector and Delta too; a lost one is seen fast
        cluster = {
            "spark.executor.extraClassPath": jars,
            "spark.executor.memory": "512m",
            "spark.executor.cores": "1",
            "spark.cores.max": "2",
            "spark.network.timeout": "30s",
            "spark.network.timeoutInterval": "10s",
            "spark.executor.heartbeatInterval": "3s",
            "spark.driver.host": os.environ["SPARK_LOCAL_IP"],
        }
        for key, value in cluster.items():
            builder = builder.config(key, value)
    return (
        builder.appName("user-job")
        .config("spark.driver.extraClassPath", jars)
        .config("spark.driver.memory", "1g")
        # a short-lived local driver on a small machine: start fast rather than peak
        .config("spark.driver.extraJavaOptions", "-XX:+UseSerialGC -XX:TieredStopAtLevel=1")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.databricks.delta.snapshotPartitions", "2")  # a small local table
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
        .config(
            "spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog"
        )
        .getOrCreate()
    )


def shaped(
    batch: Any, batch_id: int, newest_first: bool = True, last_only: bool = True
) -> tuple[Any, Any]:
    """A micro-batch as its dead letters and its last record per key (``deleted`` for a
    tombstone; ``last_only`` False: every record with a usable value). A dead letter keeps the
    record's value as ``CAST(value AS STRING)`` gives it (bytes that are not UTF-8 as they
    are)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    v = F.col("value").cast("string")
    is_object = F.expr("try_parse_json(cast(value as string))").isNotNull() & v.startswith("{")
    rows = batch.select(
        F.col("key").cast("string").alias("id"),
        "partition",
        "offset",
        v.alias("value"),
        F.col("value").isNull().alias("deleted"),
        (F.col("key").isNull() | (F.col("value").isNotNull() & ~is_object)).alias("bad"),
        F.get_json_object(v, "$.i").cast("bigint").alias("i"),
        F.get_json_object(v, "$.w").alias("w"),
        F.get_json_object(v, "$.p").alias("p"),
        F.lit(batch_id).cast("bigint").alias("batch_id"),
        F.current_timestamp().alias("at"),
    )
    position = F.concat_ws(":", "partition", "offset").alias("id")
    bad = rows.where("bad").select(position, "partition", "offset", "value", "batch_id", "at")
    if not last_only:
        return bad, rows.where("NOT bad")
    order = F.col("offset").desc() if newest_first else F.col("offset")
    last = Window.partitionBy("id").orderBy(order)
    latest = rows.where("NOT bad").withColumn("n", F.row_number().over(last)).where("n = 1")
    return bad, latest


class WriteBatch:
    """``foreachBatch``: the batch's dead letters, then its last record per key, merged."""

    def __init__(self, root: str, variant: str | None) -> None:
        self.accounts, self.dead = f"{root}/accounts", f"{root}/dead_letters"
        self.upsert = UPSERT.format(path=self.accounts)
        if variant == "keeps-deleted-rows":  # the one-line bug: the delete clause is lost
            self.upsert = self.upsert.replace("WHEN MATCHED AND s.deleted THEN DELETE\n", "")
        # the MERGE copied from Delta's documentation: a key twice in a batch is inserted twice
        # into an empty table, and fails the MERGE once the table holds it
        # (DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE); a tombstone updates to nulls
        self.as_documented = variant == "merge-as-documented"
        if self.as_documented:
            self.upsert = AS_DOCUMENTED.format(path=self.accounts)

    def __call__(self, batch: Any, batch_id: int) -> None:
        bad, latest = shaped(batch, batch_id, last_only=not self.as_documented)
        spark = batch.sparkSession
        bad.createOrReplaceTempView("bad")
        if self.as_documented:  # the table's columns, by name (UPDATE SET *, INSERT *)
            cols = ("id", "i", "w", "p", "batch_id", "at AS updated_at")
            latest.selectExpr(*cols).createOrReplaceTempView("updates")
        else:
            latest.createOrReplaceTempView("latest")
        spark.sql(DEAD_LETTER.format(path=self.dead))
        spark.sql(self.upsert)
        print(f"batch {batch_id} written", flush=True)


SQLITE_TABLES = (
    "CREATE TABLE IF NOT EXISTS accounts (id TEXT PRIMARY KEY, i INTEGER, w TEXT, p TEXT,"
    " batch_id INTEGER, updated_at TEXT)",
    # append-only: the batch marker below keeps a batch's dead letters from being added twice
    'CREATE TABLE IF NOT EXISTS dead_letters (id TEXT, partition INTEGER, "offset"'
    " INTEGER, value TEXT, batch_id INTEGER, failed_at TEXT)",
    "CREATE TABLE IF NOT EXISTS applied_batches (app TEXT, batch_id INTEGER,"
    " PRIMARY KEY (app, batch_id))",
)
SQLITE_UPSERT = """
INSERT INTO accounts (id, i, w, p, batch_id, updated_at) VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (id) DO UPDATE SET i = excluded.i, w = excluded.w, p = excluded.p,
  batch_id = excluded.batch_id, updated_at = excluded.updated_at
"""
SQLITE_DEAD_LETTER = """
INSERT INTO dead_letters (id, partition, "offset", value, batch_id, failed_at)
VALUES (?, ?, ?, ?, ?, ?)
"""


class WriteBatchToSQLite:
    """``foreachBatch`` into SQLite: the batch's dead letters and its last record per key
    (upserted, or deleted for a tombstone), and the batch's mark in ``applied_batches``, in one
    transaction; a batch already marked (replayed after a crash) is skipped."""

    upsert, dead_letter = SQLITE_UPSERT, SQLITE_DEAD_LETTER
    delete = "DELETE FROM accounts WHERE id = ?"
    applied = "SELECT 1 FROM applied_batches WHERE app = ? AND batch_id = ?"
    mark = "INSERT INTO applied_batches (app, batch_id) VALUES (?, ?)"

    def __init__(self, root: str, variant: str | None, app: str = "") -> None:
        #: the batch marks' application: one per query, the same after a restart
        self.app = app
        self.db = self.connect(root)
        # a bug of its own: an error of the database is logged and the batch let go (a disk
        # that is full, taken for a passing "database is locked")
        self.swallow = variant == "swallows-disk-full"
        # the one-line bug: the batch's first record of a key wins instead of its last
        self.newest_first = variant != "first-record-wins"
        # the other: the upserts are committed apart from the deletes and dead letters
        self.split = variant == "split-transactions"
        # and another: the batch's transaction is handed to a thread, not awaited (the batch
        # "returns fast"); in order, one at a time, so an unfaulted run is correct
        self.writer = ThreadPoolExecutor(1) if variant == "write-in-thread" else None

    def __call__(self, batch: Any, batch_id: int) -> None:
        bad, latest = shaped(batch, batch_id, self.newest_first)
        cols = ("id", "deleted", "i", "w", "p", "batch_id", "at")
        rows = latest.select(*cols).collect()
        dead = bad.select("id", "partition", "offset", "value", "batch_id", "at").collect()
        upserts = [(r["id"], *r[2:6], r["at"].isoformat()) for r in rows if not r["deleted"]]
        letters = [(*r[:5], r["at"].isoformat()) for r in dead]
        deletes = [(r["id"],) for r in rows if r["deleted"]]
        if self.writer is not None:
            self.writer.submit(self.write, upserts, letters, deletes, batch_id)
            return
        self.write(upserts, letters, deletes, batch_id)

    def write(self, upserts: list[Any], letters: list[Any], deletes: list[Any], n: int) -> None:
        """Commit one batch's rows, once."""
        try:
            self.commit(upserts, letters, deletes, n)
        except self.errors() as exc:
            if not self.swallow:
                raise
            print(f"batch {n} not written ({exc}): going on", flush=True)

    def commit(self, upserts: list[Any], letters: list[Any], deletes: list[Any], n: int) -> None:
        """The batch's transaction(s), unless it is marked applied."""
        with self.transaction() as db:
            done = db.execute(self.applied, (self.app, n)).fetchone() is not None
            if self.split and not done:  # the one-line bug: the upserts commit on their own
                db.executemany(self.upsert, upserts)
        if done:
            print(f"batch {n} already applied: skipped", flush=True)
            return
        with self.transaction() as db:  # one transaction: commits, or rolls back on an error
            db.executemany(self.dead_letter, letters)
            db.executemany(self.delete, deletes)
            if not self.split:
                db.executemany(self.upsert, upserts)
            db.execute(self.mark, (self.app, n))
        print(f"batch {n} written", flush=True)

    def errors(self) -> type[Exception]:
        """The database's operational errors (a full disk among them)."""
        import sqlite3

        return sqlite3.OperationalError

    def connect(self, root: str) -> Any:
        """``accounts.db`` under ``root``, in WAL mode (readers never wait for the job)."""
        import sqlite3

        db = sqlite3.connect(f"{root}/accounts.db", timeout=60, check_same_thread=False)
        db.execute("PRAGMA journal_mode=WAL")
        for ddl in SQLITE_TABLES:
            db.execute(ddl)
        db.commit()
        return db

    def transaction(self) -> Any:
        """A transaction (a context manager giving something with ``executemany``)."""
        return self.db


class WriteBatchToPostgres(WriteBatchToSQLite):
    """The same, into PostgreSQL: the schema ``--schema`` of the database ``--dsn``."""

    upsert = SQLITE_UPSERT.replace("?", "%s")
    dead_letter = SQLITE_DEAD_LETTER.replace("?", "%s")
    delete = "DELETE FROM accounts WHERE id = %s"
    applied = WriteBatchToSQLite.applied.replace("?", "%s")
    mark = WriteBatchToSQLite.mark.replace("?", "%s")

    def __init__(self, dsn: str, schema: str, variant: str | None, app: str = "") -> None:
        self.dsn, self.schema = dsn, schema
        super().__init__("", variant, app)

    def errors(self) -> type[Exception]:
        import psycopg

        return psycopg.OperationalError

    def connect(self, root: str) -> Any:
        import psycopg

        db = psycopg.connect(self.dsn, options=f"-csearch_path={self.schema}")
        with db.transaction():
            db.execute(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"')
            for ddl in SQLITE_TABLES:
                db.execute(ddl.replace("INTEGER", "BIGINT"))
        return db

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Any]:
        with self.db.transaction(), self.db.cursor() as cursor:
            yield cursor


class WriteBatchToKafka:
    """``foreachBatch`` into Kafka: the batch's last record per key to the compacted topic
    ``accounts-out`` (its fields as a JSON object, a tombstone for a delete) and its dead
    letters to ``dead-letters-out``, with Spark's Kafka sink (at least once)."""

    topics = ("accounts-out", "dead-letters-out")

    def __init__(self, bootstrap: str, variant: str | None) -> None:
        from confluent_kafka import KafkaError, KafkaException
        from confluent_kafka.admin import AdminClient, NewTopic

        self.bootstrap, self.newest_first = bootstrap, variant != "first-record-wins"
        admin = AdminClient({"bootstrap.servers": bootstrap})
        compacted = {"cleanup.policy": "compact"}
        new = [NewTopic(t, 1, 1, config=compacted) for t in self.topics]
        for done in admin.create_topics(new).values():
            try:
                done.result(30)
            except KafkaException as exc:  # there already: a restart
                if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                    raise

    def __call__(self, batch: Any, batch_id: int) -> None:
        from pyspark.sql import functions as F

        bad, latest = shaped(batch, batch_id, self.newest_first)
        at = F.col("at")
        keep = {"ignoreNullFields": "false"}  # a missing field is a null, as in the tables
        row = F.to_json(F.struct("i", "w", "p", "batch_id", at.alias("updated_at")), keep)
        value = F.when(F.col("deleted"), F.lit(None)).otherwise(row)
        fields = ("partition", "offset", "value", "batch_id", at.alias("failed_at"))
        dead = F.to_json(F.struct(*fields), keep)
        for frame, topic in (
            (bad.select("id", dead.alias("value")), self.topics[1]),
            (latest.select("id", value.alias("value")), self.topics[0]),
        ):
            writer = frame.withColumnRenamed("id", "key").write.format("kafka")
            writer.option("kafka.bootstrap.servers", self.bootstrap).option("topic", topic).save()
        print(f"batch {batch_id} written", flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Run until SIGTERM."""
    from user_job import release2  # (it builds on this module's sinks)

    p = argparse.ArgumentParser(prog="python -m user_job")
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--topic", required=True)
    p.add_argument("--dir", required=True, help="the checkpoint and the tables live here")
    p.add_argument("--jars", default="", help="Kafka connector and Delta jars, ':'-separated")
    p.add_argument("--max-offsets", type=int, default=5000)
    p.add_argument("--variant", default=None)
    p.add_argument("--sink", choices=("delta", "sqlite", "postgres", "kafka"), default="delta")
    p.add_argument("--dsn", default="", help="--sink postgres: the database")
    p.add_argument("--schema", default="public", help="--sink postgres: the tables' schema")
    p.add_argument("--master", default=None, help="a standalone cluster (spark://HOST:PORT)")
    p.add_argument("--release", type=int, choices=(1, 2), default=1, help="2: user_job.release2")
    args = p.parse_args(argv)
    if args.release == 2 and args.sink not in ("delta", "sqlite"):
        p.error(f"--release 2 is the Delta and SQLite sinks' (not --sink {args.sink})")
    stop = {"asked": False}
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the JVM starts with SIGTERM ignored
    spark = session(args.jars, args.master)
    signal.signal(signal.SIGTERM, lambda *_: stop.update(asked=True))
    # the batch marks' application: the query's checkpoint, the same after a restart (the
    # one-line bug: Spark's application id, new in every process: a replayed batch is redone)
    where, starting = f"{args.dir}/checkpoint", "earliest"
    if args.release == 2:
        where, starting = release2.checkpoint(args.dir, args.variant)
    app = where
    if args.variant == "marker-per-process":
        app = spark.sparkContext.applicationId
    if args.sink == "sqlite":
        release = release2.WriteBatchToSQLiteV2 if args.release == 2 else WriteBatchToSQLite
        write: Any = release(args.dir, args.variant, app)
    elif args.sink == "postgres":
        write = WriteBatchToPostgres(args.dsn, args.schema, args.variant, app)
    elif args.sink == "kafka":
        write = WriteBatchToKafka(args.bootstrap, args.variant)
    else:
        spark.sql(ACCOUNTS.format(path=f"{args.dir}/accounts"))
        spark.sql(DEAD_LETTERS.format(path=f"{args.dir}/dead_letters"))
        write = WriteBatch(args.dir, args.variant)
        if args.release == 2:
            write = release2.WriteBatchV2(args.dir, args.variant)
            write.prepare(spark)
    query = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", args.bootstrap)
        .option("subscribe", args.topic)
        .option("startingOffsets", starting)
        .option("maxOffsetsPerTrigger", str(args.max_offsets))
        .load()
        .writeStream.foreachBatch(write)
        .option("checkpointLocation", where)
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
