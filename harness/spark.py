"""Spark sessions for local mode with the Kafka connector on the classpath and small heaps."""

from __future__ import annotations

import os
from typing import Any

from harness.jars import spark_connector_jars


def spark_session(
    app_name: str = "sealcheck",
    cores: int = 2,
    driver_memory: str = "1g",
    extra_conf: dict[str, str] | None = None,
) -> Any:
    """Return a local-mode ``SparkSession`` bound to 127.0.0.1 with ``spark-sql-kafka``.

    The connector comes from ``spark.jars`` paths in the jar cache (``sealcheck setup``),
    never from ``spark.jars.packages``. The UI is off and shuffles use ``cores`` partitions,
    sized for a 2-core machine. Returns ``pyspark.sql.SparkSession`` (typed ``Any`` because
    PySpark ships no stubs for mypy's strict mode).
    """
    from pyspark.sql import SparkSession

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", os.environ.get("PYSPARK_PYTHON", "python3"))
    conf = {
        "spark.jars": ",".join(str(p) for p in spark_connector_jars()),
        "spark.driver.memory": driver_memory,
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": str(cores),
        "spark.default.parallelism": str(cores),
        "spark.sql.adaptive.enabled": "false",
        "spark.driver.extraJavaOptions": "-XX:+UseG1GC -Dio.netty.tryReflectionSetAccessible=true",
    }
    conf.update(extra_conf or {})
    builder = SparkSession.builder.master(f"local[{cores}]").appName(app_name)
    for key, value in conf.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    return session
