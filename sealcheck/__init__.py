"""Sealcheck: runs one test — real Kafka, the system under test under a supervisor,
a seeded workload, a planned fault schedule — and judges and stores it.

The public API is deliberately small; everything not re-exported here is internal:

* :class:`TestConfig`, :class:`WorkloadConfig`, :func:`load_config`, :class:`ConfigError`:
  the serialisable spec of a test;
* :class:`Test`, :func:`build_test`: a spec built into one value (system under test, backend,
  nemeses with their schedule, seeds, checkers), whose parts can be swapped in Python;
* :func:`run_test`, :class:`Outcome`: run it (``sealcheck run`` does exactly this).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sealcheck.harness.run.config import ConfigError, TestConfig, WorkloadConfig, load_config
    from sealcheck.harness.run.runner import Outcome, run_test
    from sealcheck.harness.run.test import Test, build_test

#: Where each public name lives. Imported on first use, so that ``import sealcheck.infra.keeper``
#: (a process the harness starts) does not load the whole engine.
_HOMES = {
    "ConfigError": "sealcheck.harness.run.config",
    "TestConfig": "sealcheck.harness.run.config",
    "WorkloadConfig": "sealcheck.harness.run.config",
    "load_config": "sealcheck.harness.run.config",
    "Outcome": "sealcheck.harness.run.runner",
    "run_test": "sealcheck.harness.run.runner",
    "Test": "sealcheck.harness.run.test",
    "build_test": "sealcheck.harness.run.test",
}


def __getattr__(name: str) -> Any:
    """Import a public name from its home on first use (PEP 562)."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'sealcheck' has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)


__all__ = [
    "ConfigError",
    "Outcome",
    "Test",
    "TestConfig",
    "WorkloadConfig",
    "build_test",
    "load_config",
    "run_test",
]
