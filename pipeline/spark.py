"""Spark sessions for local mode with the Kafka connector on the classpath and small heaps.

The connector's jars are handed in (``--jars`` or ``SEALCHECK_SPARK_JARS``): the pipeline
never looks for them itself, so it depends on nothing but PySpark. Sealcheck copies them from
Maven Central once (``sealcheck setup``) and passes their paths to every incarnation.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

#: Where an incarnation finds the connector's jars when ``--jars`` is not given: paths of jars
#: or of directories holding them, separated by ``os.pathsep``.
JARS_ENV = "SEALCHECK_SPARK_JARS"


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
            "into .cache/jars/spark-kafka-<version>/)"
        )
    return jars


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
