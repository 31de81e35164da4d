"""Roles as values: what a run's nodes of one kind are (:class:`Role`).

A role is declared by whoever provides its nodes — the backend (``broker``; ``database``, kept
only when the system under test keeps its store there), the Spark cluster (``spark-worker``,
``spark-executor``), the run itself (:data:`SUT`: the system under test's running incarnation)
— and the run's roles travel to the nemeses in their plan info (a mapping name -> role). Kill,
pause and partition read how many nodes a role has, how an action names one, whether a kill of
it heals itself and which links can be cut from them; a nemesis whose role the run lacks is
refused before the run starts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Role:
    """What the nodes of one role are, in one run.

    ``name`` is what nemeses ask the run's target for (``target.nodes(name)``); ``count`` how
    many nodes it has; ``index_key`` the key of an action's value that says which node it acts
    on (None: one node, no key); ``self_healing`` whether a node comes back by itself after a
    kill (the supervisor restarts the incarnation, a worker launches a new executor), so a kill
    of it is an instant, not an outage; ``requires`` the capabilities the run needs for nodes of
    this role to exist (``sealcheck.core.capabilities.CAPABILITIES``). ``noun`` is the word in
    its actions' names (``kill-<noun>``, ``start-<noun>``; default ``name``), kept as stored
    schedules spell it; ``link`` names the network link from the system under test to these
    nodes that the partition nemesis can cut (kind ``sut-<link>``; None: none)."""

    name: str
    count: int = 1
    index_key: str | None = None
    self_healing: bool = False
    requires: frozenset[str] = field(default_factory=frozenset)
    noun: str = ""
    link: str | None = None

    @property
    def word(self) -> str:
        """The word in its actions' names."""
        return self.noun or self.name


#: The running incarnation of the system under test, as one node (declared by the run: its
#: supervisor restarts every incarnation that exits, so a kill of it is an instant). Here on
#: the floor because nemeses that act on the incarnation (failpoint, zombie, lost-writes) name it.
SUT = Role("sut", self_healing=True)


def by_name(*roles: Role) -> dict[str, Role]:
    """``roles`` as a mapping name -> role (the form plan info carries)."""
    return {r.name: r for r in roles}


def links(roles: Mapping[str, Role]) -> list[str]:
    """The partition kinds of links from the system under test to the nodes of ``roles``
    (``sut-kafka``, ``sut-database``), in the roles' order."""
    return [f"{SUT.name}-{r.link}" for r in roles.values() if r.link]
