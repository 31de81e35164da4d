"""The judges of a run: they read data only (topic dump, persist store, history), so a stored
run can be re-judged offline. :func:`check_run` also records what the report shows besides the
verdict (the step assignment, the seal lag, the failing keys' story: :mod:`.facts`), so the
report renders ``results.json`` and computes nothing.

Public API: :func:`check_run`, :func:`load_run`, :func:`run_checkers`, :data:`CHECKERS`,
:class:`RunData`, :class:`CheckResult`, :class:`Anomaly`, :class:`RunResult`.
"""

from pathlib import Path

import polars as pl
import pyarrow as pa

from sealcheck.checkers.facts import NOT_LOADED, run_facts
from sealcheck.checkers.inputs import RunData
from sealcheck.checkers.load import RunInputError, load_run
from sealcheck.checkers.registry import CHECKERS, run_checkers
from sealcheck.checkers.result import Anomaly, CheckResult, RunResult
from sealcheck.rundir.facts import RunFacts
from sealcheck.rundir.files import why_unreadable


def check_run(run_dir: Path, names: list[str] | None = None) -> RunResult:
    """Load ``run_dir``, run the checkers (all by default) and record the run's facts
    (:attr:`RunResult.facts`). Inputs that are missing or cannot be read give an unknown
    verdict whose first input problem says which file and why, never an exception."""
    missing = RunFacts.missing(NOT_LOADED)
    try:
        run = load_run(run_dir)
    except RunInputError as exc:
        return RunResult({}, [*exc.causes, str(exc)], facts=missing)
    except (OSError, pl.exceptions.PolarsError, pa.ArrowException) as exc:  # a file to name
        where = getattr(exc, "filename", None) or run_dir
        why = f"{where}: cannot be read ({why_unreadable(exc)}); nothing judged"
        return RunResult({}, [why], facts=missing)
    result = run_checkers(run, names)
    result.facts = run_facts(run, result)
    return result


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
