"""Containers backend: a local Docker engine, offline images and containerised Kafka."""
