"""How Sealcheck starts and judges user_job (Sealcheck's public API only)."""

import json
import sys
from dataclasses import dataclass

import sealcheck
from sealcheck import DeadLetter, Delete, DeltaOutput, Job, JobRun, Record, Upsert


@dataclass(frozen=True)
class UserJob(Job):
    name = "user-job"
    broken_modes = {"keeps-deleted-rows": "the MERGE lost its delete clause"}  # noqa: RUF012

    def command(self, run: JobRun) -> list[str]:
        jars = [*sealcheck.spark_kafka_jars(), *sealcheck.delta_jars()]
        job = [sys.executable, "-m", "user_job", "--bootstrap", run.bootstrap, "--topic", run.topic]
        job += ["--dir", str(run.dir), "--jars", ":".join(map(str, jars))]
        return [*job, "--max-offsets", str(run.max_records_per_step), "--variant", run.broken or ""]

    def output(self, run: JobRun) -> DeltaOutput:
        metadata = ("batch_id", "updated_at", "failed_at")  # columns never compared
        dead_letters = run.dir / "dead_letters"
        return DeltaOutput(
            run.dir / "checkpoint", run.dir / "accounts", "id", dead_letters, exclude=metadata
        )

    def effect(self, record: Record) -> Upsert | Delete:
        """What one record should do to the tables: upsert, delete or a dead letter."""
        try:
            doc = json.loads(record.value) if record.value is not None else None
        except ValueError:
            doc = "not JSON"
        if record.key is None or (record.value is not None and not isinstance(doc, dict)):
            where = {"partition": record.partition, "offset": record.offset}
            return DeadLetter(f"{record.partition}:{record.offset}", where)
        if doc is None:
            return Delete(record.key.decode())
        return Upsert(record.key.decode(), {k: doc.get(k) for k in ("i", "w", "p")})
