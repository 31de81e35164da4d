"""The same job writing into PostgreSQL: no bindings, no failpoints, judged from snapshots."""

import hashlib
from dataclasses import dataclass

from psycopg.conninfo import make_conninfo
from user_job_sqlite_sealcheck import UserJobSQLite

from sealcheck import JobRun, PostgresOutput


@dataclass(frozen=True)
class UserJobPostgres(UserJobSQLite):
    dsn: str  # the database the job writes into; each run gets a schema of its own there
    name = "user-job-postgres"
    versions = ()  # release 2 is the SQLite sink's
    broken_modes = {k: v for k, v in UserJobSQLite.broken_modes.items() if k[:3] != "v2-"}  # noqa: RUF012

    def command(self, run: JobRun) -> list[str]:
        sink = ["--sink", "postgres", "--dsn", self.dsn, "--schema", schema(run)]
        return [*super().command(run), *sink]

    def output(self, run: JobRun) -> PostgresOutput:  # type: ignore[override]
        """The run's schema; the harness snapshots it while the run goes on."""
        metadata = ("batch_id", "updated_at", "failed_at")  # columns never compared
        dsn = make_conninfo(self.dsn, options=f"-csearch_path={schema(run)}")
        return PostgresOutput(dsn, "accounts", "id", errors="dead_letters", exclude=metadata)


def schema(run: JobRun) -> str:
    """The run's own schema: a run, or its replay, starts from empty tables."""
    return "run_" + hashlib.sha256(str(run.dir).encode()).hexdigest()[:16]
