"""``kill``: SIGKILL the pipeline at a seeded moment of each window (the supervisor restarts
it, so every kill is a crash-and-recover cycle)."""

from __future__ import annotations

import random
from typing import Any

from nemeses.api import Action, Nemesis, Target, settled


class Kill(Nemesis):
    """SIGKILL the running pipeline incarnation."""

    name = "kill"

    def plan(self, rng: random.Random, start_s: float, window_s: float) -> list[Action]:
        """One kill at a uniform moment of the window's first half."""
        return [self._act(start_s + rng.uniform(0, window_s / 2), "kill-pipeline")]

    def invoke(self, action: Action, target: Target) -> dict[str, Any]:
        """Kill now (skipped only when no incarnation runs, even after waiting for one)."""
        return settled(target.pipeline_kill(), "killed", "no pipeline incarnation was running")
