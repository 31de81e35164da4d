"""Nemeses: the fault injectors of a Sealcheck test.

Public API: :class:`Nemesis` (the protocol: plan, invoke, resolve, heal), :class:`Action` (one
planned step), :class:`Target` and :class:`Node` (what nemeses act on: nodes by role),
:class:`Mark` (how the timeline draws an action), :class:`PlanInfo` (the run's roles and the
system's failpoints), :data:`NEMESES` (the registry), :func:`plan_schedule` and
:func:`describe`. :class:`Node` is :class:`sealcheck.core.nodes.Node`.
"""

from sealcheck.core.nodes import Node
from sealcheck.nemeses.api import Action, Mark, Nemesis, PlanInfo, Target
from sealcheck.nemeses.registry import NEMESES
from sealcheck.nemeses.schedule import describe, plan_schedule

__all__ = [
    "NEMESES",
    "Action",
    "Mark",
    "Nemesis",
    "Node",
    "PlanInfo",
    "Target",
    "describe",
    "plan_schedule",
]
