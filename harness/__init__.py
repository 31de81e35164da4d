"""Sealcheck's harness: starts real Kafka and the pipeline, drives workloads, runs tests.

The public API is deliberately small; everything not re-exported here is internal.
"""

from harness.jars import JarsMissingError, kafka_classpath, setup_jars, spark_connector_jars
from harness.kafka_local import KafkaCluster, KafkaNode
from harness.spark import spark_session

__all__ = [
    "JarsMissingError",
    "KafkaCluster",
    "KafkaNode",
    "kafka_classpath",
    "setup_jars",
    "spark_connector_jars",
    "spark_session",
]
