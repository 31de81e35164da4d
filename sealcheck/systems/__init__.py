"""Systems under test: what the harness needs to know of each, as one small descriptor.

Public API: :class:`SystemUnderTest` and :class:`Deployment` (the protocol), :class:`Settings`,
:class:`Progress`, :class:`CapturesSteps` (an optional capability), :class:`Unjudgeable` (what
an output raises to halt the run), :data:`SYSTEMS` (the registry), :func:`system`, and the
roles of a run (:func:`run_roles`, :func:`every_role`).
:class:`Disk` is :class:`sealcheck.core.nodes.Disk`.
"""

from sealcheck.core.nodes import Disk
from sealcheck.systems.api import (
    CapturesSteps,
    Deployment,
    Progress,
    Settings,
    SystemUnderTest,
    Unjudgeable,
)
from sealcheck.systems.registry import SYSTEMS, system
from sealcheck.systems.roles import every_role, run_roles

__all__ = [
    "SYSTEMS",
    "CapturesSteps",
    "Deployment",
    "Disk",
    "Progress",
    "Settings",
    "SystemUnderTest",
    "Unjudgeable",
    "every_role",
    "run_roles",
    "system",
]
