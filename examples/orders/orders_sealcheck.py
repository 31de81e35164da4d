"""How Sealcheck feeds, starts and judges the orders job (Sealcheck's public API only)."""

import sys
from dataclasses import dataclass

from orders_job.schema import ORDER, SCHEMA_ID

import sealcheck
from sealcheck import DeadLetter, Delete, DeltaOutput, Draw, Job, JobRun, NewRecord, Record, Upsert
from sealcheck.formats import AvroValues

#: the checkout service's values: ``shop.Order`` in Confluent's wire format, schema id 1
VALUES = AvroValues(ORDER, schema_id=SCHEMA_ID)


@dataclass(frozen=True)
class Orders(Job):
    name = "orders"
    broken_modes = {  # noqa: RUF012
        "amount-through-double": "the amount passes through a double on its way to the table",
        "newest-by-event-time": "the order placed last wins, not the record written last",
    }

    def command(self, run: JobRun) -> list[str]:
        jars = [*sealcheck.spark_kafka_jars(), *sealcheck.delta_jars()]
        jars += sealcheck.spark_avro_jars()
        job = [sys.executable, "-m", "orders_job", "--bootstrap", run.bootstrap]
        job += ["--topic", run.topic, "--dir", str(run.dir), "--jars", ":".join(map(str, jars))]
        return [*job, "--max-offsets", str(run.max_records_per_step), "--variant", run.broken or ""]

    def output(self, run: JobRun) -> DeltaOutput:
        metadata = ("batch_id", "updated_at", "failed_at")  # columns never compared
        orders, rejected = run.dir / "orders", run.dir / "rejected"
        return DeltaOutput(run.dir / "checkpoint", orders, "id", rejected, exclude=metadata)

    def record(self, draw: Draw) -> NewRecord:
        """What the checkout service writes for what Sealcheck drew: an order's new version
        (its revision is the record's number), a cancellation, or a value that never decodes."""
        key = f"order-{draw.key}".encode()
        if draw.kind == "tombstone":
            return NewRecord(key, None)
        if draw.kind == "bad":
            return NewRecord(key, VALUES.bad(draw))
        order = VALUES.draw(draw, revision=draw.number)
        return NewRecord(key, VALUES.encode(order), headers=[("source", b"checkout")])

    def effect(self, record: Record) -> Upsert | Delete:
        """What one record should do to the tables: upsert, delete or a rejected record."""
        if record.value is None:
            return Delete(record.key_text)
        try:
            order = VALUES.decode(record.value)
        except ValueError:
            raw = record.value.hex().upper()  # as Spark's hex() writes it
            where = {"partition": record.partition, "offset": record.offset, "raw": raw}
            return DeadLetter(f"{record.partition}:{record.offset}", where)
        return Upsert(record.key_text, order)
