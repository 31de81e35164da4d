"""An example of a job people write: Kafka -> Spark Structured Streaming -> Delta Lake."""
