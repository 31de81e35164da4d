"""Runs of runs: suites, shrinking, self-test, and the child runs they start."""
