"""An ``orders`` job: Avro orders from Kafka, the latest per order in Delta."""
