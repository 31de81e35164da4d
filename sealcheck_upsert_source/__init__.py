"""The system under test: a persistent Kafka upsert source on Spark.

Entry point ``sealcheck upsert-source`` / ``python -m sealcheck_upsert_source``
(:mod:`sealcheck_upsert_source.cli`); the step loop is :mod:`sealcheck_upsert_source.loop`, the
persist layer :mod:`sealcheck_upsert_source.persist`.
"""
