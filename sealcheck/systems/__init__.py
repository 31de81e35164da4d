"""Systems under test: what the harness needs to know of each, as one small descriptor.

Public API: :class:`SystemUnderTest` and :class:`Deployment` (the protocol), :class:`Settings`,
:class:`Progress`, :class:`CapturesSteps` (an optional capability), :data:`SYSTEMS` (the
registry) and :func:`system`.
"""

from sealcheck.systems.api import (
    CapturesSteps,
    Deployment,
    Disk,
    Progress,
    Settings,
    SystemUnderTest,
)
from sealcheck.systems.registry import SYSTEMS, system

__all__ = [
    "SYSTEMS",
    "CapturesSteps",
    "Deployment",
    "Disk",
    "Progress",
    "Settings",
    "SystemUnderTest",
    "system",
]
