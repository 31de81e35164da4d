"""The tiny SQLite job (:mod:`tests.integration.tiny_sqlite_job`) as a descriptor, correct for
keyed records, and the short runs its tests make: it restarts in a second."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sealcheck import Job, JobRun, SQLiteOutput

JOB = Path(__file__).with_name("tiny_sqlite_job.py")
#: two windows of 6 s; no keyless records (the tiny job keeps them under NULL)
RUN: dict[str, Any] = {"duration": 12, "interval": 6, "keys": 50, "rate": 50}
NO_KEYLESS = {"workload.bad_ratio": 0}


@dataclass(frozen=True)
class Tiny(Job):
    """The tiny SQLite job: the offsets it stored, then every record into ``out.db``."""

    name = "tiny"

    def command(self, run: JobRun) -> list[str]:
        return [sys.executable, str(JOB), run.bootstrap, run.topic, str(run.dir / "out.db")]

    def output(self, run: JobRun) -> SQLiteOutput:
        return SQLiteOutput(run.dir / "out.db", "accounts", "id", value="v", settle_s=10)
