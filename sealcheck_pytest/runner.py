"""The plugin's parametrised case (a seed and a nemesis set) and the run name of a test."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Case:
    """One parametrised case of a ``@pytest.mark.sealcheck`` test: a seed and a nemesis set
    (None: the system's default mix)."""

    seed: int
    nemeses: tuple[str, ...] | None = None

    @property
    def id(self) -> str:
        """``seed3-kill+pause`` (the pytest id)."""
        return f"seed{self.seed}" + (f"-{'+'.join(self.nemeses)}" if self.nemeses else "")


def run_name(nodeid: str) -> str:
    """A run name (letters, digits, ``._-``; at most 56 characters, so a counter suffix
    stays within the 64 a run name may have) from a pytest node id."""
    tail = nodeid.split("::", 1)[-1]
    return re.sub(r"[^A-Za-z0-9._-]+", "-", tail).strip("-")[:56] or "pytest"
