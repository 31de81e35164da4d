"""``kill-postgres``: SIGKILL the PostgreSQL server (containers backend), start it again a
seeded while later. The pipeline's transactions in flight fail; it must resume from what
was committed."""

from __future__ import annotations

import random
from typing import Any

from nemeses.api import Action, Nemesis, Target, settled


class KillPostgres(Nemesis):
    """Kill the database early in the window, restart it after 20-50% of it."""

    name = "kill-postgres"

    def plan(self, rng: random.Random, start_s: float, window_s: float) -> list[Action]:
        """One kill and its restart."""
        return self._interval(rng, start_s, window_s, "kill-postgres", "start-postgres")

    def invoke(self, action: Action, target: Target) -> dict[str, Any]:
        """Kill or start."""
        if action.f == "kill-postgres":
            return settled(target.postgres_kill(), "killed", "PostgreSQL was not running")
        return settled(target.postgres_start(), "started", "PostgreSQL was running")

    def heal(self, target: Target) -> list[str]:
        """Start the server if it is down."""
        done = target.postgres_start()
        return ["started PostgreSQL"] if done.get("started") else []
