"""Fixtures shared by the integration suite's files."""

from __future__ import annotations

import pytest

from tests.integration.installed import Installed, install
from tests.product import in_git_checkout


@pytest.fixture(scope="session")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """Sealcheck's wheel and the worked example's, installed from a local wheelhouse into a
    fresh virtualenv (:mod:`tests.integration.installed`), once per session."""
    if not in_git_checkout():
        pytest.skip("needs a git checkout")
    return install(tmp_path_factory.mktemp("installed"))
