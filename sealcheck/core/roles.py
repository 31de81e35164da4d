"""Roles as values: what a run's nodes of one kind are (:class:`Role`).

A role is declared by whoever provides its nodes — the backend (``broker``; ``database``, kept
only when the system under test keeps its store there), the Spark cluster (``spark-worker``,
``spark-executor``), the run itself (:data:`SUT`: the system under test's running incarnation)
— and the run's roles travel to the nemeses in their plan info (a mapping name -> role). Kill,
pause and partition read how many nodes a role has, how an action names one, whether a kill of
it heals itself and which links can be cut from them; a nemesis whose role the run lacks is
refused before the run starts. A run records its roles in ``test.json`` (``roles``:
:func:`role_to_json`), so readers of a stored run (the report's timeline) read them from the run
(:func:`stored_roles`), with the built-in roles (:data:`BUILT_IN`) for runs stored before.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


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


def role_to_json(role: Role) -> dict[str, Any]:
    """``role`` as a JSON-ready dict (what ``test.json``'s ``roles`` records of a run)."""
    return {
        "name": role.name,
        "count": role.count,
        "index_key": role.index_key,
        "self_healing": role.self_healing,
        "requires": sorted(role.requires),
        "noun": role.noun,
        "link": role.link,
    }


def role_from_json(doc: Mapping[str, Any]) -> Role:
    """The inverse of :func:`role_to_json`; a ValueError (or KeyError, TypeError) for a dict
    that is not one."""
    key, noun, link = doc.get("index_key"), doc.get("noun", ""), doc.get("link")
    if not isinstance(doc["name"], str) or not isinstance(noun, str):
        raise ValueError(f"not a role: {doc!r}")
    return Role(
        doc["name"],
        int(doc.get("count", 1)),
        None if key is None else str(key),
        bool(doc.get("self_healing", False)),
        frozenset(str(r) for r in doc.get("requires", ())),
        noun,
        None if link is None else str(link),
    )


#: The built-in roles, as the run's providers declare them (three brokers, a Spark cluster of
#: two workers): what a stored run that did not record its roles is read with (the report's
#: timeline draws its actions by them). Kept here, on the floor, so that readers of stored
#: runs need nothing of the systems or backends; a unit test keeps it equal to what the
#: providers declare (:func:`sealcheck.systems.roles.every_role`).
BUILT_IN: Mapping[str, Role] = by_name(
    SUT,
    Role("broker", 3, "broker", link="kafka"),
    Role("database", requires=frozenset({"database"}), noun="postgres", link="database"),
    Role("spark-worker", 2, "worker", requires=frozenset({"spark-cluster"})),
    Role(
        "spark-executor",
        2,
        "worker",
        self_healing=True,
        requires=frozenset({"spark-cluster"}),
        noun="executor",
    ),
)


def stored_roles(doc: object) -> dict[str, Role]:
    """The roles a stored run recorded (``test.json``'s ``roles``: a list of
    :func:`role_to_json` dicts); :data:`BUILT_IN` for a run stored before runs recorded them,
    or whose record is unreadable."""
    if not isinstance(doc, list) or not doc:
        return dict(BUILT_IN)
    try:
        return by_name(*(role_from_json(d) for d in doc))
    except (KeyError, TypeError, ValueError, AttributeError):
        return dict(BUILT_IN)
