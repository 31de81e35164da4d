"""Nemeses: the fault injectors of a Sealcheck test.

Public API: :class:`Nemesis` (the protocol: plan, invoke, heal), :class:`Action` (one planned
step), :class:`Target` (what nemeses act on), :class:`PlanInfo`, :data:`NEMESES` (the
registry), :func:`plan_schedule` and :func:`describe`. Failpoints the ``failpoint`` nemesis
arms are defined in :mod:`pipeline.failpoints`.
"""

from nemeses.api import Action, Nemesis, PlanInfo, Target
from nemeses.registry import NEMESES
from nemeses.schedule import describe, plan_schedule

__all__ = ["NEMESES", "Action", "Nemesis", "PlanInfo", "Target", "describe", "plan_schedule"]
