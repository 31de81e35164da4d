"""The failing keys' story as the report shows it: the stories the checkers recorded in
``results.json`` (:class:`sealcheck.rundir.facts.KeyStory`, told by
:mod:`sealcheck.checkers.stories`), put in words — every input record of a key (partition,
offset, value or tombstone, when it was acknowledged, the step that bound it) and every
persisted update of it (collection, value, step, diff, sealed or not), the first bad update
highlighted.

Nothing is computed here and the run's data files are not read: a run judged before stories
were recorded shows why there are none (:data:`sealcheck.rundir.facts.NOT_RECORDED`).
"""

from __future__ import annotations

from typing import Any

from sealcheck.rundir.facts import KeyStory, RunFacts, StoryRecord, StoryUpdate

#: the step of a record in the story of an output without bindings
NO_BINDINGS = "unknown (no bindings)"


def _record(r: StoryRecord, kept: bool) -> dict[str, Any]:
    unbound = "not bound" if kept else NO_BINDINGS
    return {
        "partition": r.partition,
        "offset": r.offset,
        "value": "(tombstone)" if r.value is None else r.value,
        "acked": "not acknowledged" if r.acked_s is None else f"{r.acked_s:.2f} s",
        "step": unbound if r.step is None else r.step,
        "hit": r.hit,
    }


def _update(u: StoryUpdate, kept: bool) -> dict[str, Any]:
    sealed = "sealed" if kept else "seen by the harness"
    return {
        "collection": u.collection,
        "value": "(tombstone)" if u.value is None else u.value,
        "step": u.step,
        "diff": u.diff,
        "sealed": sealed if u.sealed else f"not sealed (upper {u.upper})",
        "hit": u.hit,
    }


def told(story: KeyStory, kept: bool = True) -> dict[str, Any]:
    """One story as the template shows it (every value in words; ``kept``: the output keeps
    bindings, else no record is bound to a state and the story says so)."""
    return {
        "key": story.key,
        "why": story.why,
        "records": [_record(r, kept) for r in story.records],
        "updates": [_update(u, kept) for u in story.updates],
        "more_records": story.more_records,
        "more_updates": story.more_updates,
    }


def stories(
    facts: RunFacts, anomalies: list[dict[str, Any]], kept: bool = True
) -> tuple[list[dict[str, Any]], str]:
    """The stories to show and, when there are none, why (no anomalies; none names a key; not
    recorded for this run); ``kept`` as :func:`told`."""
    if not anomalies:
        return [], "no anomalies"
    if not facts.stories:
        return [], facts.story_why or "no anomaly names a key"
    return [told(s, kept) for s in facts.stories], ""
