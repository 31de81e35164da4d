"""The same job writing into compacted Kafka topics: judged from their prefixes between batches."""

from dataclasses import dataclass

from user_job_sqlite_sealcheck import UserJobSQLite

from sealcheck import JobRun, TopicOutput


@dataclass(frozen=True)
class UserJobKafka(UserJobSQLite):
    name = "user-job-kafka"
    broken_modes = {"first-record-wins": "a batch's first record of a key wins"}  # noqa: RUF012
    versions = ()  # release 2 is the SQLite sink's

    def command(self, run: JobRun) -> list[str]:
        return [*super().command(run), "--sink", "kafka"]

    def output(self, run: JobRun) -> TopicOutput:  # type: ignore[override]
        """The topics the job writes; states are their log ends between batches."""
        metadata = ("batch_id", "updated_at", "failed_at")  # fields never compared
        return TopicOutput(
            run.bootstrap, "accounts-out", "dead-letters-out", "id", exclude=metadata
        )
