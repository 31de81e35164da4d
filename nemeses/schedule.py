"""Planning a fault schedule from the seed, before the run starts.

Time after a warm-up is cut into windows of ``interval_s``; each window goes to one nemesis,
taken round-robin through a seeded shuffle of the mix (reshuffled every cycle, so every
nemesis gets its share and the order still varies), and that nemesis plans its actions inside
the window from the same seeded RNG. The result is a plain list of :class:`Action` that is
printed, saved in ``test.json`` and can be replayed as is.
"""

from __future__ import annotations

import random

from sealcheck.nemeses.api import Action, PlanInfo
from sealcheck.nemeses.registry import build


def plan_schedule(
    names: tuple[str, ...] | list[str],
    seed: int,
    duration_s: float,
    interval_s: float,
    info: PlanInfo,
    warmup_s: float | None = None,
) -> list[Action]:
    """Every action of a run of ``duration_s`` seconds, in time order (same seed, same list)."""
    if not names:
        return []
    rng = random.Random(seed)
    nemeses = build(names, info)
    start = interval_s if warmup_s is None else warmup_s
    cycle: list[str] = []
    actions: list[Action] = []
    while start + interval_s <= duration_s + 1e-9:
        if not cycle:
            cycle = list(names)
            rng.shuffle(cycle)
        name = cycle.pop(0)
        actions.extend(nemeses[name].plan(rng, start, interval_s))
        start += interval_s
    return sorted(actions, key=lambda a: a.at_s)


def describe(actions: list[Action]) -> list[str]:
    """One line per action, for printing the plan."""
    return [
        f"{a.at_s:8.2f}s  {a.nemesis:<10} {a.f:<16} "
        + " ".join(f"{k}={v}" for k, v in sorted(a.value.items()))
        for a in actions
    ]
