"""A user's own chaos tests, as they would sit in their repository (pip install sealcheck; the
plugin is active by itself). Each test runs real Kafka and the system under test under faults
and fails with the anomalies, the report path and the command that repeats the run.

The job under test here is Sealcheck's own pipeline; EXAMPLE_VARIANT picks one of its
deliberately broken variants (``sealcheck run --broken``) to show what a red run looks like —
in your repository it would be your job, registered as a system under test
(docs/contributing.md).
"""

from __future__ import annotations

import os
from typing import Any

import pytest

VARIANT = os.environ.get("EXAMPLE_VARIANT") or None


@pytest.mark.sealcheck(seeds=[3], nemeses=[["kill", "pause"]])
def test_the_upsert_job_survives_crashes_and_pauses(sealcheck: Any) -> None:
    """Kills and pauses at seeded times; nothing acknowledged may be lost or invented."""
    result = sealcheck("upsert-source", broken=VARIANT, duration=15, interval=5)
    result.assert_valid()
