"""The same job writing into SQLite: no bindings, no failpoints, judged from the tables."""

from dataclasses import dataclass

from user_job_sealcheck import UserJob

from sealcheck import JobRun, SQLiteOutput, streaming_windows


@dataclass(frozen=True)
class UserJobSQLite(UserJob):
    name = "user-job-sqlite"
    broken_modes = {  # noqa: RUF012
        "first-record-wins": "a batch's first record of a key wins",
        "split-transactions": "the upserts are committed apart from the deletes",
    }
    windows = streaming_windows("checkpoint")  # where the `window` nemesis kills it

    def command(self, run: JobRun) -> list[str]:
        return [*super().command(run), "--sink", "sqlite"]

    def output(self, run: JobRun) -> SQLiteOutput:  # type: ignore[override]
        """The database the job writes; the harness snapshots it while the run goes on."""
        metadata = ("batch_id", "updated_at", "failed_at")  # columns never compared
        db = run.dir / "accounts.db"
        return SQLiteOutput(db, "accounts", "id", errors="dead_letters", exclude=metadata)
