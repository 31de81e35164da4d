"""Upgrades under faults (issue 53): a job that declares two versions runs the first, and the
``upgrade`` nemesis stops it (SIGTERM or SIGKILL, seeded) and starts the second on the same
directory, topic and output. A correct second version is VALID, with the version of every
incarnation in the history; a second version that starts from the log's end instead of its
stored offsets (a new checkpoint and ``startingOffsets=latest``) is INVALID. Real Kafka, the
tiny SQLite job (:mod:`tests.integration.tiny_sqlite_job`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from sealcheck import JobRun
from tests.integration.tiny_jobs import NO_KEYLESS, RUN, Tiny

pytestmark = pytest.mark.integration


@dataclass(frozen=True)
class TwoVersions(Tiny):
    """The tiny SQLite job in two versions; ``v2-from-latest``: v2 starts at the log's end."""

    name = "tiny-two-versions"
    versions = ("v1", "v2")
    broken_modes = {"v2-from-latest": "v2 ignores the stored offsets and reads from the end"}  # noqa: RUF012

    def command(self, run: JobRun) -> list[str]:
        wrong = run.version == "v2" and run.broken == "v2-from-latest"
        return super().command(run) + (["--from-latest"] if wrong else [])


def _ops(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "history.jsonl").open()]


def _values(ops: list[dict[str, Any]], f: str) -> list[dict[str, Any]]:
    return [o["value"] for o in ops if o["f"] == f and o["type"] == "info"]


def test_a_correct_second_version_resumes_the_first(sealcheck: Any) -> None:
    result = sealcheck(TwoVersions(), nemeses=["upgrade"], **RUN, **NO_KEYLESS)
    result.assert_valid()
    ops = _ops(result.run_dir)
    [upgrade] = [o for o in ops if o["f"] == "upgrade" and o["type"] == "info"]
    value = upgrade["value"]
    assert (value["from"], value["to"], value["was_running"]) == ("v1", "v2", "v1")
    assert value["outcome"] == "happened" and value["effect"]["effect"] is True, value
    versions = {
        o["value"]["incarnation"]: o["value"]["version"] for o in ops if o["f"] == "version"
    }
    starts = [o for o in ops if o["f"] == "sut-start"]
    assert versions[0] == "v1" and versions[max(versions)] == "v2"
    assert set(versions) == {o["value"]["incarnation"] for o in starts}  # every incarnation
    # the upgrade stopped v1's incarnation; the one after it runs v2
    running = next(
        o["value"]["incarnation"] for o in starts if o["value"]["pid"] == value["running"]
    )
    assert versions[running] == "v2" and versions[running - 1] == "v1"


def test_a_second_version_that_starts_from_the_end_is_caught(sealcheck: Any) -> None:
    result = sealcheck(
        TwoVersions(), broken="v2-from-latest", nemeses=["upgrade"], **RUN, **NO_KEYLESS
    )
    result.assert_invalid()
    assert {"prefix", "completeness"} & set(result.failing_checkers), result.failing_checkers
