"""The tutorial's run from Python (``docs/your-own-job.md``, section 6, "From Python, without
pytest") runs as the page shows it, in a fresh interpreter that imports only Sealcheck's
public names and the worked example's descriptor: VALID, the verdict printed as a word, the
report written, and nothing printed by the run itself."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.product import ROOT

pytestmark = pytest.mark.integration

INTRO = "From Python, without pytest"


def snippet() -> str:
    """The page's code block after :data:`INTRO`."""
    page = (ROOT / "docs" / "your-own-job.md").read_text()
    after = page.split(INTRO, 1)[1]
    return after.split("```python\n", 1)[1].split("```\n", 1)[0]


def test_the_tutorials_run_from_python_runs_as_shown(tmp_path: Path) -> None:
    code = snippet()
    imports = [line for line in code.splitlines() if line.startswith(("import ", "from "))]
    assert imports == [
        "from sealcheck import TestConfig, WorkloadConfig, build_test, run_test",
        "from user_job_sqlite_sealcheck import UserJobSQLite",  # the example's descriptor
    ], imports
    example = ROOT / "examples" / "user_job"
    env = os.environ | {"PYTHONPATH": os.pathsep.join([str(ROOT), str(example)])}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
        timeout=900, check=False,
    )  # fmt: skip
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("VALID "), done.stdout[-3000:]
    report = tmp_path / lines[0].split(" ", 1)[1]  # under the archive "runs" of its folder
    assert report.is_file() and report.resolve().is_relative_to(tmp_path.resolve() / "runs")
