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

#: the key of ``test.json`` that holds :func:`unplanned`'s line (null: every nemesis asked
#: for got a fault)
UNPLANNED = "unplanned"


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
    cycle: list[str] = []
    actions: list[Action] = []
    for start in windows(duration_s, interval_s, warmup_s):
        if not cycle:
            cycle = list(names)
            rng.shuffle(cycle)
        name = cycle.pop(0)
        actions.extend(nemeses[name].plan(rng, start, interval_s))
    return sorted(actions, key=lambda a: a.at_s)


def windows(duration_s: float, interval_s: float, warmup_s: float | None = None) -> list[float]:
    """Where each fault window of a run starts: after a quiet first one (``warmup_s``, by
    default one window), every ``interval_s`` while a whole window fits in ``duration_s``."""
    starts: list[float] = []
    start = interval_s if warmup_s is None else warmup_s
    while interval_s > 0 and start + interval_s <= duration_s + 1e-9:
        starts.append(start)
        start += interval_s
    return starts


def describe(actions: list[Action]) -> list[str]:
    """One line per action, for printing the plan."""
    return [
        f"{a.at_s:8.2f}s  {a.nemesis:<10} {a.f:<16} "
        + " ".join(f"{k}={v}" for k, v in sorted(a.value.items()))
        for a in actions
    ]


def unplanned(
    names: tuple[str, ...] | list[str], actions: list[Action], duration_s: float, interval_s: float
) -> str | None:
    """One line naming the nemeses of ``names`` that ``actions`` gives no fault, and why, for
    the run to print before it starts and after its verdict (None: each got one) — a nemesis
    asked for and never played must not pass for tested."""
    asked = list(dict.fromkeys(names))
    missing = [n for n in asked if not any(a.nemesis == n for a in actions)]
    if not missing:
        return None
    held = len(windows(duration_s, interval_s))
    line = f"no fault planned for {', '.join(missing)}"
    if held < len(asked):
        need = (len(asked) + 1) * interval_s
        line += (
            f": {duration_s:g} s of faults in {interval_s:g} s windows hold {held} fault"
            f"{'s' if held != 1 else ''} (the first window is quiet; one nemesis a window, in "
            f"turns); give --duration {need:g} or more for one of each"
        )
    return line
