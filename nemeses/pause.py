"""``pause``: SIGSTOP the pipeline, SIGCONT it a seeded while later (a process that stalls
mid-step, then carries on as if nothing happened)."""

from __future__ import annotations

import random
from typing import Any

from nemeses.api import Action, Nemesis, Target, settled


class Pause(Nemesis):
    """Stop the pipeline's process group, continue it later."""

    name = "pause"

    def plan(self, rng: random.Random, start_s: float, window_s: float) -> list[Action]:
        """Pause early in the window, resume after 20-60% of it."""
        return self._interval(
            rng, start_s, window_s, "pause-pipeline", "resume-pipeline", share=(0.2, 0.6)
        )

    def invoke(self, action: Action, target: Target) -> dict[str, Any]:
        """Pause or resume."""
        if action.f == "pause-pipeline":
            done = target.pipeline_pause()
            return settled(done, "paused", "no pipeline incarnation was running")
        return settled(
            target.pipeline_resume(),
            "resumed",
            "nothing was paused any more (the paused incarnation was killed and replaced)",
        )

    def heal(self, target: Target) -> list[str]:
        """Continue the pipeline if it is stopped."""
        done = target.pipeline_resume()
        return [f"resumed pid {done['resumed']}"] if done.get("resumed") else []
