"""A run that cannot hold the system's commit boundaries says so (issue 51): on containers no
lazy disk lies under a job's directory, so the ``boundary`` and ``crash-at-sync`` faults that
crash it there cannot be planned; the run names those boundaries with its coverage rather than
passing for one that crashed the job at them."""

from __future__ import annotations

import pytest

import sealcheck.infra.lazy_disk
from sealcheck.core.windows import boundaries
from sealcheck.harness.run.validate import unheld_boundaries
from sealcheck.systems.delta_streaming import DeltaStreaming
from sealcheck.systems.job import Job


def test_on_containers_the_jobs_boundaries_are_named_as_not_held(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sealcheck.infra.lazy_disk, "fuse_missing", lambda: "")
    job = DeltaStreaming()
    line = unheld_boundaries("containers", job)
    count = len(boundaries(job.windows, job.commit_files))
    assert line is not None and line.startswith(f"not held: the system's {count} commit boundaries")
    assert "after-offsets:closing" in line or "more" in line
    assert "--backend local holds them" in line and "\n" not in line
    assert unheld_boundaries("local", job) is None  # its lazy disk holds them


def test_without_fuse_even_a_local_run_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sealcheck.infra.lazy_disk, "fuse_missing", lambda: "no /dev/fuse")
    line = unheld_boundaries("local", DeltaStreaming())
    assert line is not None and "FUSE is not available here" in line


def test_a_job_without_boundaries_has_nothing_to_say() -> None:
    assert unheld_boundaries("containers", Job()) is None  # declares no windows
