"""Systems under test: what the harness needs to know of each, as one small descriptor.

Public API: :class:`SystemUnderTest` and :class:`Deployment` (the protocol), :class:`Settings`,
:class:`Progress`, :class:`CapturesSteps` (an optional capability), :data:`SYSTEMS` (the
registry), :func:`system`, and the roles of a run (:func:`run_roles`, :func:`every_role`).
:class:`Disk` is :class:`sealcheck.core.nodes.Disk`.
"""

from sealcheck.core.nodes import Disk
from sealcheck.systems.api import (
    CapturesSteps,
    Deployment,
    Progress,
    Settings,
    SystemUnderTest,
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
    "every_role",
    "run_roles",
    "system",
]
