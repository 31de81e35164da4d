"""A job's versions (issue 53) without a run: each version's command from the descriptor with
``run.version``, the deployment launching the version it was switched to, one that fails in
any version refused before the run, an unknown version refused by name, and the capability
only a job of two versions or more offers."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from sealcheck import DeltaOutput, Job, JobRun
from sealcheck.systems.api import Settings
from sealcheck.systems.job import check_job
from sealcheck.systems.job_calls import DescriptorError


@dataclass(frozen=True)
class TwoVersions(Job):
    name = "two-versions"
    versions = ("v1", "v2")
    fails_in: str = ""

    def command(self, run: JobRun) -> list[str]:
        if run.version == self.fails_in:
            raise RuntimeError(f"no wheel for {run.version}")
        return ["python", "-m", "job", "--release", run.version]

    def environment(self, run: JobRun) -> dict[str, str]:
        return {"RELEASE": run.version}

    def output(self, run: JobRun) -> DeltaOutput:
        return DeltaOutput(run.dir / "checkpoint", run.dir / "table", key="id")


class _Backend:
    bootstrap = "127.0.0.1:1"
    name, runs_images = "local", False


def test_each_incarnation_runs_the_version_switched_to(tmp_path: Path) -> None:
    deployment = TwoVersions().deploy(_Backend(), Settings("t", 500), tmp_path, tmp_path)  # type: ignore[arg-type]
    deployment.start()
    assert deployment.current == "v1" and deployment.run.version == "v1"
    first = deployment.launch(0)
    assert first.args[-2:] == ("--release", "v1") and first.env["RELEASE"] == "v1"
    deployment.switch("v2")
    second = deployment.launch(1)
    assert second.args[-2:] == ("--release", "v2") and second.env["RELEASE"] == "v2"
    with pytest.raises(
        ValueError, match=r"two-versions has no version 'v3' \(its versions: v1, v2\)"
    ):
        deployment.switch("v3")
    assert deployment.current == "v2"


def test_a_version_whose_command_fails_is_refused_before_the_run(tmp_path: Path) -> None:
    run = JobRun.placeholder("t", tmp_path / "job", 500, None)
    check_job(TwoVersions(), run)
    with pytest.raises(
        DescriptorError, match=r"TwoVersions.command\(run\) raised.*no wheel for v2"
    ):
        check_job(TwoVersions(fails_in="v2"), run)


def test_only_two_versions_or_more_offer_upgrades() -> None:
    assert "versions" in TwoVersions().offers("local")
    one = dataclass(frozen=True)(type("One", (TwoVersions,), {"versions": ("v1",)}))
    assert "versions" not in one().offers("local")


@dataclass(frozen=True)
class OutputPerVersion(TwoVersions):
    """An output looked up by version (one table per release), as at the run's start."""

    def output(self, run: JobRun) -> DeltaOutput:
        table = {"v1": "accounts", "v2": "accounts_v2"}[run.version]
        return DeltaOutput(run.dir / "checkpoint", run.dir / table, key="id")


def test_the_check_before_the_run_calls_output_as_the_first_version_sees_it(
    tmp_path: Path,
) -> None:
    check_job(OutputPerVersion(), JobRun.placeholder("t", tmp_path / "job", 500, None))
