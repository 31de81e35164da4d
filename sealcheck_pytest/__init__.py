"""Sealcheck in a user's own pytest suite: a fixture that runs a chaos test and returns its
verdict, a marker that multiplies a test over seeds and nemesis sets, JUnit properties and a
failure message a person can act on (:mod:`sealcheck_pytest.plugin`)."""

from sealcheck.harness.campaigns.verdicts import AnomalySummary, ChaosResult
from sealcheck_pytest.runner import Case

__all__ = ["AnomalySummary", "Case", "ChaosResult"]
