"""How the report's timeline draws each kind of fault action, as a run stores it: each
nemesis declares a :class:`Mark` per action (``Nemesis.marks``), and the harness writes the
run's marks into ``test.json`` (:data:`MARKS`) when the run starts, so the report draws a
stored run from its directory alone, without building a nemesis."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

#: the key of ``test.json`` that holds the run's marks (action name -> :class:`Mark` as JSON)
MARKS = "marks"

#: The report's legend groups a :class:`Mark` may name: each has its own colour and lane.
GROUPS = ("kill", "failpoint", "pause", "partition", "outage", "zombie", "storage", "upgrade")


@dataclass(frozen=True)
class Mark:
    """How the report's timeline draws one kind of action: an ``instant`` (a line), or the
    ``start`` / ``end`` of an interval (shaded); an end names the ``opens`` action it closes.
    ``group`` is the legend entry it is drawn under (:data:`GROUPS`)."""

    kind: str
    label: str
    opens: str | None = None
    group: str = "storage"
    #: the keys of the action's value that say which node or link it acts on (the timeline
    #: labels the action with them and pairs a start with the end of the same one)
    which: tuple[str, ...] = ()


def marks_to_json(marks: Mapping[str, Mark]) -> dict[str, dict[str, Any]]:
    """The marks as ``test.json`` keeps them."""
    return {name: asdict(mark) for name, mark in sorted(marks.items())}


def stored_marks(doc: Any) -> dict[str, Mark] | None:
    """The marks ``test.json`` holds (None: none, or not in this form — a run stored before
    marks were kept; an entry that is not a mark is left out)."""
    if not isinstance(doc, dict):
        return None
    names = {f.name for f in fields(Mark)}
    out = {}
    for action, mark in doc.items():
        if not isinstance(mark, dict):
            continue
        values = {k: v for k, v in mark.items() if k in names}
        values["which"] = tuple(values.get("which") or ())
        try:
            out[str(action)] = Mark(**values)
        except TypeError:
            continue
    return out
