"""The job itself: a Kafka source with a checkpoint, ``foreachBatch``, two Delta ``MERGE``s.

Layout of the job's directory (``--dir``): ``data/`` and ``errors/`` (Delta tables, change
data feed on), ``checkpoint/`` (the query's checkpoint: ``offsets/N`` is written before batch N
runs, ``commits/N`` after ``foreachBatch`` returned). Per micro-batch, per raw key (null keys:
per partition) the record with the highest offset wins and decides both tables exactly as the
pipeline's record encoding says (``docs/formats.md``): a JSON value upserts ``data`` and
retracts the key's error, a tombstone deletes both, a bad value deletes the data key and upserts
an error. Each ``MERGE`` sets Delta's idempotent-write identifiers (``txnAppId`` = the app id,
``txnVersion`` = the batch id), so a batch replayed after a crash changes nothing that was
committed, and tags its commit with ``userMetadata = batch=<id>``.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sealcheck_delta_streaming.failpoints import Failpoints

TXN_APP_ID = "spark.databricks.delta.write.txnAppId"
TXN_VERSION = "spark.databricks.delta.write.txnVersion"
USER_METADATA = "spark.databricks.delta.commitInfo.userMetadata"


#: one JSON line per event on stdout (the harness reads the log)
def emit(event: str, **fields: Any) -> None:
    """Print one event as a JSON line."""
    print(json.dumps({"event": event, **fields}, sort_keys=True), flush=True)


@dataclass(frozen=True)
class JobConfig:
    """What one incarnation of the job is asked to do."""

    bootstrap: str
    topic: str
    root: Path
    max_offsets_per_trigger: int = 2000
    variant: str | None = None
    app_id: str = "sealcheck-delta-streaming"
    jars: tuple[str, ...] = ()
    cores: int = 2
    driver_memory: str = "1g"
    #: ``spark://host:port`` of a standalone cluster to submit to (None: ``local[cores]``)
    master: str | None = None

    @property
    def data(self) -> str:
        """The data table's path."""
        return str(self.root / "data")

    @property
    def errors(self) -> str:
        """The errors (dead-letter) table's path."""
        return str(self.root / "errors")

    @property
    def checkpoint(self) -> str:
        """The streaming query's checkpoint."""
        return str(self.root / "checkpoint")


def session(cfg: JobConfig) -> Any:
    """A Spark session with Delta and the Kafka connector on the driver's classpath
    (``spark.jars`` is too late for a session extension): in local mode, or as the driver of
    the standalone cluster ``cfg.master``, whose executors (``cfg.cores`` of one core each)
    find the same jars at the same paths and write the tables' files under ``cfg.root``, which
    they see at the same path (``SparkCluster(shared=...)``)."""
    from pyspark.sql import SparkSession

    conf = {
        "spark.driver.extraClassPath": ":".join(cfg.jars),
        "spark.driver.memory": cfg.driver_memory,
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": str(cfg.cores),
        "spark.default.parallelism": str(cfg.cores),
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        "spark.databricks.delta.snapshotPartitions": str(cfg.cores),
        # keep every offsets/N and commits/N: they are the run's bindings (Spark keeps 100)
        "spark.sql.streaming.minBatchesToRetain": "1000000",
        "spark.sql.adaptive.enabled": "false",
        "spark.driver.extraJavaOptions": "-XX:+UseG1GC",
    }
    if cfg.master is None:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        conf |= {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"}
        # a local driver that lives for a few batches between kills, on a small machine: start
        # fast (the client compiler, the serial collector) rather than peak
        conf["spark.driver.extraJavaOptions"] = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1"
    else:
        conf |= cluster_conf(cfg)
    master = cfg.master or f"local[{cfg.cores}]"
    builder = SparkSession.builder.master(master).appName("delta-streaming")
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark


def cluster_conf(cfg: JobConfig) -> dict[str, str]:
    """The settings of a driver on a standalone cluster: executors of one core and 512 MiB
    with the jars at the driver's paths, a lost executor noticed in seconds, and the address
    executors call back on — ``SPARK_LOCAL_IP`` where the harness set it (local processes),
    else this host's own address (a container on the run's network)."""
    host = os.environ.get("SPARK_LOCAL_IP") or socket.gethostbyname(socket.gethostname())
    return {
        "spark.executor.extraClassPath": ":".join(cfg.jars),
        "spark.executor.memory": "512m",
        "spark.executor.cores": "1",
        "spark.cores.max": str(cfg.cores),
        "spark.network.timeout": "30s",
        "spark.network.timeoutInterval": "10s",
        "spark.executor.heartbeatInterval": "3s",
        "spark.driver.host": host,
        "spark.driver.bindAddress": "0.0.0.0" if host != "127.0.0.1" else host,
    }


def create_tables(spark: Any, cfg: JobConfig) -> None:
    """Both tables, if missing (each creation is one atomic Delta commit, version 0)."""
    for path in (cfg.data, cfg.errors):
        spark.sql(
            f"CREATE TABLE IF NOT EXISTS delta.`{path}` (key STRING, value STRING) USING delta "
            "TBLPROPERTIES (delta.enableChangeDataFeed = true)"
        )


def winners(batch: Any, variant: str | None) -> Any:
    """One row per raw key (null keys: per partition): the record with the highest offset,
    with its slot (``key:<hex>`` / ``null:<partition>``, the errors table's key)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    raw = batch.select("key", "value", "partition", "offset").withColumn(
        "slot",
        F.when(
            F.col("key").isNull(), F.concat(F.lit("null:"), F.col("partition").cast("string"))
        ).otherwise(F.concat(F.lit("key:"), F.lower(F.hex("key")))),
    )
    if variant == "drop-duplicates":
        return raw.dropDuplicates(["slot"])
    order = Window.partitionBy("slot").orderBy(F.col("offset").desc(), F.col("partition").desc())
    return raw.withColumn("rn", F.row_number().over(order)).where("rn = 1").drop("rn")


def classify(win: Any) -> tuple[Any, Any]:
    """The MERGE sources: ``data`` rows (key, value, op) for UTF-8 keys and ``errors`` rows
    (key = slot, value = the error JSON, op)."""
    from pyspark.sql import functions as F

    key_ok = F.col("key").isNotNull() & F.expr("is_valid_utf8(key)")
    val_ok = (
        F.col("value").isNotNull()
        & F.expr("is_valid_utf8(value)")
        & F.expr("try_parse_json(cast(value as string))").isNotNull()
    )
    data = win.where(key_ok).select(
        F.col("key").cast("string").alias("key"),
        F.when(val_ok, F.col("value").cast("string")).alias("value"),
        F.when(val_ok, F.lit("upsert")).otherwise(F.lit("delete")).alias("op"),
    )
    reason = (
        F.when(F.col("key").isNull(), F.lit("null key"))
        .when(~key_ok, F.lit("key is not UTF-8"))
        .when(F.col("value").isNotNull() & ~val_ok, F.lit("value is not UTF-8 JSON"))
    )
    errors = win.select(
        F.col("slot").alias("key"),
        F.format_string(
            '{"offset": %d, "partition": %d, "reason": "%s"}', "offset", "partition", reason
        ).alias("value"),
        F.when(reason.isNotNull(), F.lit("upsert")).otherwise(F.lit("delete")).alias("op"),
    )
    return data, errors


MERGE = """
MERGE INTO delta.`{target}` t USING {source} s ON t.key = s.key
WHEN MATCHED AND s.op = 'delete' THEN DELETE
WHEN MATCHED AND s.op = 'upsert' THEN UPDATE SET t.value = s.value
WHEN NOT MATCHED AND s.op = 'upsert' THEN INSERT (key, value) VALUES (s.key, s.value)
"""
MERGE_NO_DELETE = """
MERGE INTO delta.`{target}` t USING {source} s ON t.key = s.key
WHEN MATCHED AND s.op = 'upsert' THEN UPDATE SET t.value = s.value
WHEN NOT MATCHED AND s.op = 'upsert' THEN INSERT (key, value) VALUES (s.key, s.value)
"""


class BatchWriter:
    """The ``foreachBatch`` function: winners, then the data MERGE, then the errors MERGE."""

    def __init__(
        self, cfg: JobConfig, fp: Failpoints, tables: Sequence[str] = ("data", "errors")
    ) -> None:
        self.cfg, self.fp, self.tables = cfg, fp, tuple(tables)
        self.app_id = cfg.app_id if "data" in self.tables else f"{cfg.app_id}-errors"

    def _commit(self, spark: Any, batch_id: int, write: Callable[[], None]) -> None:
        """One Delta commit of this batch, idempotent unless the variant says otherwise."""
        if self.cfg.variant != "no-idempotent-writes":
            spark.conf.set(TXN_APP_ID, self.app_id)
            spark.conf.set(TXN_VERSION, str(batch_id))
        spark.conf.set(USER_METADATA, f"batch={batch_id}")
        try:
            write()
        finally:
            for key in (TXN_APP_ID, TXN_VERSION, USER_METADATA):
                spark.conf.unset(key)

    def __call__(self, batch: Any, batch_id: int) -> None:
        """Write micro-batch ``batch_id`` into the tables (Spark calls this once per batch,
        and again for the same batch after a crash before its ``commits/N``)."""
        start = time.monotonic()
        emit("batch_start", batch=batch_id)
        spark = batch.sparkSession
        win = winners(batch, self.cfg.variant).persist()
        try:
            records = win.count()
            data, errors = classify(win)
            self.fp.hit("batch.before_merge")
            if "data" in self.tables:
                self._commit(spark, batch_id, lambda: self._data(spark, data, batch_id))
                self.fp.hit("batch.between_commits")
            if "errors" in self.tables:
                self._commit(spark, batch_id, lambda: self._merge(spark, errors, self.cfg.errors))
            self.fp.hit("batch.after_commits")
        finally:
            win.unpersist()
        emit("batch", batch=batch_id, winners=records, seconds=round(time.monotonic() - start, 3))

    def _data(self, spark: Any, data: Any, batch_id: int) -> None:
        if self.cfg.variant == "append-not-merge":
            rows = data.where("op = 'upsert'").select("key", "value")
            (
                rows.write.format("delta")
                .mode("append")
                .option("txnAppId", self.app_id)
                .option("txnVersion", batch_id)
                .save(self.cfg.data)
            )
            return
        sql = MERGE_NO_DELETE if self.cfg.variant == "no-tombstone-clause" else MERGE
        self._merge(spark, data, self.cfg.data, sql)

    @staticmethod
    def _merge(spark: Any, source: Any, target: str, sql: str = MERGE) -> None:
        source.createOrReplaceTempView("sealcheck_source")
        spark.sql(sql.format(target=target, source="sealcheck_source"))


def _query(
    spark: Any, cfg: JobConfig, writer: BatchWriter, checkpoint: str, max_offsets: int
) -> Any:
    source = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", cfg.bootstrap)
        .option("subscribe", cfg.topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", str(max_offsets))
        .option("failOnDataLoss", "true")
        .load()
    )
    return (
        source.writeStream.foreachBatch(writer)
        .option("checkpointLocation", checkpoint)
        .queryName(writer.app_id)
        .start()
    )


def run(cfg: JobConfig, fp: Failpoints) -> int:
    """Run until SIGTERM/SIGINT (exit 0) or until a query fails (exit 1)."""
    stop = {"asked": False}

    def ask_stop(signum: int, _frame: Any) -> None:
        stop["asked"] = True

    # Spark's JVM is started with SIGTERM/SIGINT ignored (a JVM keeps an ignored shutdown
    # signal ignored), so a stop sent to the whole process group reaches only this process,
    # which lets the running micro-batch finish; the JVM still exits when this process does.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    started = time.monotonic()
    spark = session(cfg)
    signal.signal(signal.SIGTERM, ask_stop)
    signal.signal(signal.SIGINT, ask_stop)
    create_tables(spark, cfg)
    fp.hit("start.before_query")
    cap = cfg.max_offsets_per_trigger
    if cfg.variant == "unrelated-errors-query":
        # the dead-letter query is tuned on its own (here: half the batch size), as a
        # separately written query is; with equal settings and a backlog both would plan the
        # same ranges and the tables would agree by luck
        half = max(1, cfg.max_offsets_per_trigger // 2)
        queries = [
            _query(spark, cfg, BatchWriter(cfg, fp, ("data",)), cfg.checkpoint, cap),
            _query(spark, cfg, BatchWriter(cfg, fp, ("errors",)), cfg.checkpoint + "-errors", half),
        ]
    else:
        queries = [_query(spark, cfg, BatchWriter(cfg, fp), cfg.checkpoint, cap)]
    emit("started", seconds=round(time.monotonic() - started, 3), variant=cfg.variant)
    while not stop["asked"]:
        for q in queries:
            if not q.isActive:
                error = q.exception()
                emit("crashed", query=q.name, error=str(error)[:2000] if error else None)
                return 1
        time.sleep(0.2)
    emit("stopping")
    # let a running micro-batch finish (stop() would interrupt it between its two commits)
    deadline = time.monotonic() + 15  # the harness kills after 20-30 s
    while any(q.isActive and q.status["isTriggerActive"] for q in queries):
        if time.monotonic() > deadline:
            break
        time.sleep(0.1)
    for q in queries:
        q.stop()
    emit("stopped")
    return 0
