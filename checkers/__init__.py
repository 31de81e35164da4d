"""The judges of a run: they read data only (topic dump, persist store, history), so a stored
run can be re-judged offline.

Public API: :func:`check_run`, :func:`load_run`, :func:`run_checkers`, :data:`CHECKERS`,
:class:`RunData`, :class:`CheckResult`, :class:`Anomaly`, :class:`RunResult`.
"""

from pathlib import Path

import polars as pl
import pyarrow as pa

from sealcheck.checkers.inputs import RunData, RunInputError, load_run
from sealcheck.checkers.registry import CHECKERS, run_checkers
from sealcheck.checkers.result import Anomaly, CheckResult, RunResult
from sealcheck.rundir.files import why_unreadable


def check_run(run_dir: Path, names: list[str] | None = None) -> RunResult:
    """Load ``run_dir`` and run the checkers (all by default). Inputs that are missing or
    cannot be read give an unknown verdict whose first input problem says which file and why,
    never an exception."""
    try:
        run = load_run(run_dir)
    except RunInputError as exc:
        return RunResult({}, [*exc.causes, str(exc)])
    except (OSError, pl.exceptions.PolarsError, pa.ArrowException) as exc:  # a file to name
        where = getattr(exc, "filename", None) or run_dir
        return RunResult({}, [f"{where}: cannot be read ({why_unreadable(exc)}); nothing judged"])
    return run_checkers(run, names)


__all__ = [
    "CHECKERS",
    "Anomaly",
    "CheckResult",
    "RunData",
    "RunInputError",
    "RunResult",
    "check_run",
    "load_run",
    "run_checkers",
]
