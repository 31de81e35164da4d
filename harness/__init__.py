"""Sealcheck's harness: runs one test — real Kafka, the system under test under a supervisor,
a seeded workload, a planned fault schedule — and judges and stores it.

The public API is deliberately small; everything not re-exported here is internal:

* :class:`TestConfig`, :class:`WorkloadConfig`, :func:`load_config`, :class:`ConfigError`:
  the serialisable spec of a test;
* :class:`Test`, :func:`build_test`: a spec built into one value (system under test, backend,
  nemeses with their schedule, seeds, checkers), whose parts can be swapped in Python;
* :func:`run_test`, :class:`Outcome`: run it (``sealcheck run`` does exactly this).
"""

from harness.config import ConfigError, TestConfig, WorkloadConfig, load_config
from harness.runner import Outcome, run_test
from harness.test import Test, build_test

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
