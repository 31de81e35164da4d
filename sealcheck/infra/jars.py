"""JVM jars from Maven Central: fetched once by ``sealcheck setup``, never at run time.

The Maven project ``jvm/pom.xml`` (package data: ``sealcheck/infra/resources/jvm/``) declares
four modules, each copied (runtime classpath) into ``<cache>/jars/<module>-<version>/``
(:func:`sealcheck.infra.paths.cache_dir`):

* ``kafka``: the Apache Kafka broker (KRaft) with a log4j2 backend;
* ``spark-kafka``: ``spark-sql-kafka-0-10_2.13`` matching the installed PySpark, minus
  the jars PySpark already ships. Spark gets it through ``spark.jars`` paths;
* ``spark-delta``: ``delta-spark_2.13`` and ``delta-storage`` (the delta-streaming system
  under test), for the driver's classpath (a session extension must be there at start);
* ``spark-avro``: ``spark-avro_2.13`` matching the installed PySpark (``from_avro`` for a user's
  job whose topic carries Avro), minus the jars PySpark already ships.
"""

from __future__ import annotations

import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

from sealcheck.infra.paths import cache_dir, jvm_dir

#: The parent pom, installed with the package (not a checkout's file).
POM = jvm_dir() / "pom.xml"
_NS = {"m": "http://maven.apache.org/POM/4.0.0"}


class JarsMissingError(RuntimeError):
    """The jar cache lacks a module: ``sealcheck setup`` has not been run (or failed)."""


def pom_property(name: str) -> str:
    """A property of the parent pom (:data:`POM`), e.g. ``kafka.version``."""
    node = ET.parse(POM).getroot().find(f"m:properties/m:{name}", _NS)
    if node is None or not node.text:
        raise KeyError(f"{POM} has no property {name!r}")
    return node.text.strip()


def jars_dir() -> Path:
    """Where ``sealcheck setup`` copies the jars."""
    return cache_dir() / "jars"


def _module_dir(module: str, version: str) -> Path:
    path = jars_dir() / f"{module}-{version}"
    marker = path / ".complete"
    if not marker.exists():
        raise JarsMissingError(
            f"no jars for {module} {version} in {path}; run `sealcheck setup` "
            "(or `make setup`) once to copy them from Maven Central"
        )
    return path


def setup_jars(quiet: bool = True) -> dict[str, Path]:
    """Copy every module's jars into the cache (idempotent); return module → directory.

    Raises :class:`RuntimeError` naming Maven's last lines when resolution fails.
    """
    mvn = shutil.which("mvn")
    if mvn is None:
        raise RuntimeError("Maven (`mvn`) is not on PATH; install Debian's `maven` package")
    versions = {
        "kafka": pom_property("kafka.version"),
        "spark-kafka": pom_property("spark.version"),
        "spark-delta": pom_property("delta.version"),
        "spark-avro": pom_property("spark.version"),
    }
    dirs = {m: jars_dir() / f"{m}-{v}" for m, v in versions.items()}
    if all((d / ".complete").exists() for d in dirs.values()):
        return dirs
    for d in dirs.values():
        if d.exists() and not (d / ".complete").exists():
            shutil.rmtree(d)  # a half-copied module from an interrupted setup
    cmd = [mvn, "-B", "-f", str(POM), "package", f"-Dcache.dir={jars_dir()}"]
    if quiet:
        cmd.insert(1, "-q")
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise RuntimeError(f"Maven could not copy the jars (exit {proc.returncode}):\n{tail}")
    for d in dirs.values():
        (d / ".complete").touch()
    return dirs


def kafka_classpath() -> str:
    """The Kafka broker's classpath (a ``dir/*`` wildcard entry)."""
    return str(_module_dir("kafka", pom_property("kafka.version")) / "*")


def spark_connector_jars() -> list[Path]:
    """The jars to put on ``spark.jars`` for the Kafka connector.

    Raises :class:`JarsMissingError` if the installed PySpark does not match the pom.
    """
    import pyspark

    wanted = pom_property("spark.version")
    if pyspark.__version__ != wanted:
        raise JarsMissingError(
            f"installed pyspark is {pyspark.__version__} but {POM} pins the connector "
            f"for {wanted}; reinstall Sealcheck (in a checkout: `pip install -e .`) so the two "
            "agree"
        )
    return sorted(_module_dir("spark-kafka", wanted).glob("*.jar"))


def delta_jars() -> list[Path]:
    """Delta Lake's jars for Spark (``delta-spark`` and ``delta-storage``)."""
    return sorted(_module_dir("spark-delta", pom_property("delta.version")).glob("*.jar"))


def spark_avro_jars() -> list[Path]:
    """The jars to put on ``spark.jars`` for ``from_avro``/``to_avro`` (``spark-avro``)."""
    return sorted(_module_dir("spark-avro", pom_property("spark.version")).glob("*.jar"))
