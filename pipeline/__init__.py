"""The system under test: a persistent Kafka upsert source on Spark.

Entry point ``sealcheck pipeline`` / ``python -m pipeline`` (:mod:`pipeline.cli`); the step
loop is :mod:`pipeline.loop`, the persist layer :mod:`pipeline.persist`.
"""
