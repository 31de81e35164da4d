"""The roles of a run, gathered from whoever provides their nodes.

The run itself provides :data:`sealcheck.core.roles.SUT` (its supervised incarnation), the
backend its brokers and, where it has one, its database server
(:meth:`sealcheck.infra.node.Backend.roles`), the Spark cluster its workers and executors
(:func:`sealcheck.systems.spark_cluster.roles`). A run keeps a role only where what the role
``requires`` is offered — by the backend, or by the system under test on it — so the database
is a role of a run only where the system keeps its store there (it offers ``database``), and a
Spark cluster's only with ``--spark cluster``.
"""

from __future__ import annotations

from sealcheck.core.roles import SUT, Role
from sealcheck.infra.backends import NAMES, capabilities
from sealcheck.infra.backends import roles as backend_roles
from sealcheck.systems import spark_cluster
from sealcheck.systems.api import SystemUnderTest

#: brokers assumed where the run is not known (drawing a stored run's actions)
_BROKERS = 3


def run_roles(sut: SystemUnderTest, backend: str, brokers: int, spark: str) -> dict[str, Role]:
    """The roles of a run of ``sut`` on ``backend`` with ``brokers`` brokers and Spark mode
    ``spark``, in a fixed order (the incarnation, the backend's, the cluster's)."""
    offered = capabilities(backend) | sut.offers(backend)
    if spark != "cluster":
        offered -= {"spark-cluster"}
    declared = [SUT, *backend_roles(backend, brokers).values(), *spark_cluster.roles().values()]
    return {r.name: r for r in declared if r.requires <= offered}


def every_role() -> dict[str, Role]:
    """Every role any run may have, as their providers declare them (three brokers). Readers
    of stored runs use the floor's copy of it, :data:`sealcheck.core.roles.BUILT_IN`, which a
    unit test keeps equal to this."""
    declared = [SUT, *(r for b in NAMES for r in backend_roles(b, _BROKERS).values())]
    return {r.name: r for r in [*declared, *spark_cluster.roles().values()]}
