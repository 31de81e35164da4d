"""How Sealcheck starts and judges user_job writing into SQLite: judged from its tables."""

import json
import sys
from dataclasses import dataclass

import sealcheck
from sealcheck import DeadLetter, Delete, Job, JobRun, Record, SQLiteOutput, Upsert


@dataclass(frozen=True)
class UserJobSQLite(Job):
    name = "user-job-sqlite"
    broken_modes = {  # noqa: RUF012
        "first-record-wins": "a batch's first record of a key wins",
        "split-transactions": "the upserts are committed apart from the deletes",
        "write-in-thread": "a batch's transaction is handed to a thread, not awaited",
        "marker-per-process": "the batch marker is keyed on Spark's application id",
        "swallows-disk-full": "a database error is logged and the batch let go",
        # release 2's mistakes (`--nemesis upgrade`: v1 stopped, v2 started on its state)
        "v2-fresh-checkpoint": "v2 starts a checkpoint of its own from the latest offsets",
        "v2-delete-needs-tier": "v2's delete matches on its new column, NULL in v1's rows",
        "v2-normalised-keys": "v2 upper-cases the key",
        "v2-tier-on-insert-only": "v2 sets tier when it inserts a row, not when it updates one",
    }
    windows = sealcheck.streaming_windows("checkpoint")  # where the `window` nemesis kills it
    versions = ("v1", "v2")  # v2 (`--release 2`) adds a column, `tier`, and resumes v1

    def command(self, run: JobRun) -> list[str]:
        jars = ":".join(map(str, [*sealcheck.spark_kafka_jars(), *sealcheck.delta_jars()]))
        job = [sys.executable, "-m", "user_job", "--bootstrap", run.bootstrap, "--topic", run.topic]
        job += ["--dir", str(run.dir), "--jars", jars, "--sink", "sqlite"]
        job += ["--release", "2" if run.version == "v2" else "1"]
        return [*job, "--max-offsets", str(run.max_records_per_step), "--variant", run.broken or ""]

    def output(self, run: JobRun) -> SQLiteOutput:
        metadata = ("batch_id", "updated_at", "failed_at")  # columns never compared
        db = run.dir / "accounts.db"  # the job's tables; snapshotted while the run goes on
        return SQLiteOutput(db, "accounts", "id", errors="dead_letters", exclude=metadata)

    def effect(self, record: Record, version: str = "v1") -> Upsert | Delete:
        """What one record should do to the tables: upsert, delete or a dead letter."""
        try:
            doc = json.loads(record.value) if record.value is not None else None
        except ValueError:
            doc = "not JSON"
        if record.key is None or (record.value is not None and not isinstance(doc, dict)):
            text = record.value.decode(errors="replace") if record.value is not None else None
            where = {"partition": record.partition, "offset": record.offset, "value": text}
            return DeadLetter(f"{record.partition}:{record.offset}", where)
        if doc is None:
            return Delete(record.key.decode())
        row = {k: doc.get(k) for k in ("i", "w", "p")}
        if version == "v2":  # v2's new column; v1's rows hold it as NULL
            row["tier"] = "even" if type(row["i"]) is int and row["i"] % 2 == 0 else "odd"
        return Upsert(record.key.decode(), row)
