"""One word for a verdict on both result types: ``Outcome.verdict`` (``run_test``) and
``ChaosResult.verdict`` (the pytest plugin) are ``VALID``, ``INVALID`` or ``UNKNOWN``;
``ChaosResult.valid``, which counted UNKNOWN as not valid where ``Outcome.valid`` is None,
is a deprecated alias that says so."""

from __future__ import annotations

from pathlib import Path

import pytest

from sealcheck import Outcome
from sealcheck.harness.campaigns.verdicts import ChaosResult


@pytest.mark.parametrize(
    ("valid", "word"), [(True, "VALID"), (False, "INVALID"), (None, "UNKNOWN")]
)
def test_both_results_say_the_verdict_in_one_word(valid: bool | None, word: str) -> None:
    assert Outcome(Path("r"), valid, "caught up", 1.0).verdict == word
    result = ChaosResult(word, Path("r"), 1, {True: 0, False: 1, None: 2}[valid])
    assert result.verdict == word
    with pytest.warns(DeprecationWarning, match='use result.verdict == "VALID"'):
        assert result.valid is (valid is True)
