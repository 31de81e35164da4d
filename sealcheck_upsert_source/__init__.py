"""The system under test: a persistent Kafka upsert source on Spark.

Entry point ``sealcheck pipeline`` / ``python -m pipeline`` (:mod:`sealcheck_upsert_source.cli`);
the step
loop is :mod:`sealcheck_upsert_source.loop`, the persist layer
:mod:`sealcheck_upsert_source.persist`.
"""
