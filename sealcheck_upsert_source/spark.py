"""Spark sessions: local mode in this process, or a client of a Spark Connect server.

* Local mode (``local[N]``, the classic embedded driver): the Kafka connector's jars are
  handed in (``--jars`` or ``SEALCHECK_SPARK_JARS``); the pipeline never looks for them
  itself, so it depends on nothing but PySpark. A new process pays for a JVM and a cold first
  query: 8-9 s here (``docs/systems.md``, "Recovery").
* Spark Connect (``--spark-remote sc://host:port`` or ``SEALCHECK_SPARK_REMOTE``): the driver
  is a long-lived server that holds the connector; the pipeline is a thin gRPC client, so a
  restarted incarnation reads again after about 1 s. :func:`connect_server_command` says how to
  start such a server from the installed PySpark.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

#: Where an incarnation finds the connector's jars when ``--jars`` is not given: paths of jars
#: or of directories holding them, separated by ``os.pathsep``.
JARS_ENV = "SEALCHECK_SPARK_JARS"
#: The Spark Connect server to use when ``--spark-remote`` is not given (unset: local mode).
REMOTE_ENV = "SEALCHECK_SPARK_REMOTE"
#: What a Spark Connect server logs once it accepts clients.
CONNECT_READY = "Spark Connect server started"


class JarsNotGivenError(RuntimeError):
    """No connector jars were given or the paths hold none; the message says what to do."""


def connector_jars(spec: str | None = None) -> list[str]:
    """The jar files named by ``spec`` (default: ``$SEALCHECK_SPARK_JARS``); directories
    expand to the ``*.jar`` files inside them."""
    text = spec if spec is not None else os.environ.get(JARS_ENV, "")
    jars: list[str] = []
    for part in filter(None, text.split(os.pathsep)):
        path = Path(part)
        jars += [str(p) for p in sorted(path.glob("*.jar"))] if path.is_dir() else [part]
    missing = [j for j in jars if not Path(j).is_file()]
    if not jars or missing:
        raise JarsNotGivenError(
            f"no Spark Kafka connector jars ({missing or text or 'none given'}): pass "
            f"--jars or set {JARS_ENV} to the jars' directory (`sealcheck setup` copies them "
            "into ~/.cache/sealcheck/jars/spark-kafka-<version>/)"
        )
    return jars


def remote_session(url: str) -> Any:
    """A Spark Connect session on the server at ``url`` (``sc://host:port``)."""
    from pyspark.sql import SparkSession

    return SparkSession.builder.remote(url).getOrCreate()


def connect_server_command(
    jars_dir: str,
    port: int,
    host: str = "127.0.0.1",
    cores: int = 2,
    driver_memory: str = "1g",
    spark_submit: str | None = None,
    master: str | None = None,
    driver_host: str | None = None,
) -> list[str]:
    """The command that runs a Spark Connect server (the one bundled with PySpark) on
    ``host:port``, with the Kafka connector's jars from ``jars_dir`` on its classpath: in local
    mode, or as the driver of the standalone cluster at ``master`` (``spark://host:port``),
    whose executors (``cores`` of one core each) find the jars at the same path and reach the
    driver at ``driver_host``."""
    if spark_submit is None:
        import pyspark

        spark_submit = str(Path(pyspark.__file__).parent / "bin" / "spark-submit")
    conf = {
        "spark.connect.grpc.binding.address": host,
        "spark.connect.grpc.binding.port": str(port),
        "spark.driver.extraClassPath": f"{jars_dir}/*",
        "spark.driver.memory": driver_memory,
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": str(cores),
        "spark.default.parallelism": str(cores),
        "spark.sql.adaptive.enabled": "false",
        "spark.driver.extraJavaOptions": "-XX:+UseG1GC -Dio.netty.tryReflectionSetAccessible=true",
    }
    if master is not None:
        conf |= {
            "spark.executor.extraClassPath": f"{jars_dir}/*",
            "spark.executor.memory": "512m",
            "spark.executor.cores": "1",
            "spark.cores.max": str(cores),
            # a lost worker is noticed in seconds, and its tasks run again elsewhere
            "spark.network.timeout": "30s",
            "spark.network.timeoutInterval": "10s",
            "spark.executor.heartbeatInterval": "3s",
        }
        if driver_host is not None:
            conf |= {"spark.driver.host": driver_host, "spark.driver.bindAddress": "0.0.0.0"}
    args = [spark_submit, "--class", "org.apache.spark.sql.connect.service.SparkConnectServer"]
    args += ["--name", "sealcheck-spark", "--master", master or f"local[{cores}]"]
    for key, value in conf.items():
        args += ["--conf", f"{key}={value}"]
    return [*args, "spark-internal"]


def spark_session(
    jars: Sequence[str],
    app_name: str = "sealcheck",
    cores: int = 2,
    driver_memory: str = "1g",
    extra_conf: dict[str, str] | None = None,
) -> Any:
    """Return a local-mode ``SparkSession`` bound to 127.0.0.1 with the connector ``jars``.

    The connector comes from ``spark.jars`` paths, never from ``spark.jars.packages``. The
    UI is off and shuffles use ``cores`` partitions, sized for a 2-core machine. Returns
    ``pyspark.sql.SparkSession`` (typed ``Any``: PySpark ships no stubs for strict mypy).
    """
    from pyspark.sql import SparkSession

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", os.environ.get("PYSPARK_PYTHON", "python3"))
    conf = {
        "spark.jars": ",".join(jars),
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
