"""What a run's verdict covers, in words, composed from what ``results.json`` says was judged:
the banner's sentence and the lines under it (and the plain-text lines ``sealcheck run`` and
``sealcheck check`` print), so a verdict never reads as more than its checkers judged.

* An output that keeps bindings (our pipeline, a Delta job read with its checkpoint): VALID
  means every sealed step equals what the Kafka input implies — said only when ``sealed_state``
  judged every sealed step — and the line under it counts the steps judged one by one.
* An output without bindings (SQL tables, Kafka topics, Delta tables alone): ``sealed_state``
  is not applicable, so VALID says what ``prefix`` judged — every state seen is the upsert of a
  prefix of the input, and the last is the whole input's (or that the last was not judged so) —
  and the lines under it count the states judged and name the batches they follow (the
  run's facts: :class:`sealcheck.rundir.facts.StatesSeen`).

Nothing is computed here but words from the counts and facts the checkers recorded.
"""

from __future__ import annotations

from typing import Any

from sealcheck.rundir.facts import RunFacts, StatesSeen, bindings_kept, read_facts
from sealcheck.rundir.states import BATCHES, COMMITS, SAMPLES

#: the collections whose every sealed step sealed_state judges
TWO = ("data", "errors")

#: what a VALID verdict means for an output whose every sealed step was judged (and the
#: INVALID and UNKNOWN banners, whatever was judged)
MEANING = {
    True: "Every checker passed on complete inputs: nothing acknowledged was lost, nothing "
    "was invented, and every sealed step equals what the Kafka input implies.",
    False: "A checker found a violation: the anomalies below are evidence of a bug (in the "
    "system under test, or in Kafka's guarantees as configured).",
    None: "Nothing was proved either way: an input was missing, truncated or stale, or a "
    "checker could not run. The reasons are below; rerun or fix the inputs.",
}
#: every state of an output without bindings, by how its export's record says they were
#: taken ({n}: how many)
EVERY = {
    SAMPLES: "every state the harness saw ({n})",
    BATCHES: "every state of the tables ({n}, one per batch their commits name)",
    COMMITS: "every state of the tables ({n}, one per commit)",
    None: "every state the export holds ({n})",
}
#: the same, without the count (after "States judged by prefix: N —")
EVERY_STATE = {
    SAMPLES: "every state the harness saw",
    BATCHES: "every state of the tables, one per batch their commits name",
    COMMITS: "every state of the tables, one per commit",
    None: "every state the export holds",
}
#: how the states were taken, after "of the N states"
SEEN = {SAMPLES: "the harness saw", BATCHES: "of the tables", COMMITS: "of the tables"}
#: said of an output without bindings, after what it passed
NO_BINDINGS = "This output keeps no bindings: which offsets each state read is unknown."


def _counts(results: dict[str, Any], name: str) -> dict[str, Any]:
    checker = (results.get("checkers") or {}).get(name) or {}
    counts = checker.get("counts")
    return counts if isinstance(counts, dict) else {}


def _passed(results: dict[str, Any], name: str) -> bool:
    return ((results.get("checkers") or {}).get(name) or {}).get("valid") is True


def steps_judged(results: dict[str, Any]) -> str:
    """ "data 142/142, errors 142/142": sealed steps judged one by one / sealed, per collection
    (``sealed_state``'s counts; empty when it did not run)."""
    counts = _counts(results, "sealed_state")
    return ", ".join(
        f"{c} {counts[f'{c}_steps_judged']:,}/{counts[f'{c}_steps_sealed']:,}"
        for c in ("data", "errors")
        if f"{c}_steps_judged" in counts and f"{c}_steps_sealed" in counts
    )


def _every_step(results: dict[str, Any]) -> bool:
    """Whether ``sealed_state`` passed and judged every sealed step one by one (its counts say
    so for both collections: counts it did not record prove nothing)."""
    counts = _counts(results, "sealed_state")
    said = [(counts.get(f"{c}_steps_judged"), counts.get(f"{c}_steps_sealed")) for c in TWO]
    return _passed(results, "sealed_state") and all(j is not None and j == s for j, s in said)


def _every(results: dict[str, Any], states: StatesSeen | None) -> str:
    """ "every state the harness saw (42)": the states of an output without bindings, counted
    by its export's record (else by ``prefix``)."""
    if states is not None:
        return EVERY.get(states.by, EVERY[None]).format(n=f"{states.seen:,}")
    judged = _counts(results, "prefix").get("states_judged")
    if isinstance(judged, int):
        return EVERY[None].format(n=f"{judged:,}")
    return EVERY_STATE[None]  # judged before prefix counted its states


def _last(results: dict[str, Any]) -> str:
    final = _counts(results, "prefix").get("final_state_judged")
    if final == 1:
        return "the last is the whole input's"
    return "the last was not judged as the whole input's (the output never settled)"


def meaning(results: dict[str, Any], facts: RunFacts) -> str:
    """The banner's sentence: for VALID, what the checkers that applied judged; else the
    verdict's fixed meaning."""
    valid = results.get("valid")
    if valid is not True:
        return MEANING[valid if valid is False else None]
    if _every_step(results):
        return MEANING[True]
    kept = bindings_kept(results, facts)
    clauses = []
    if _passed(results, "completeness"):
        clauses.append(
            "nothing acknowledged was lost" if kept else "every acknowledged write is in the topic"
        )
    if _passed(results, "no_phantoms"):
        clauses.append("nothing was invented")
    if _passed(results, "prefix") and not kept:
        every = _every(results, facts.states)
        clauses.append(f"{every} is the upsert of a prefix of the input; {_last(results)}")
    head = "Every applicable checker passed on complete inputs"
    if clauses:
        said = ", ".join(clauses[:-1]) + (" and " if len(clauses) > 1 else "") + clauses[-1]
        head = f"{head}: {said}."
    else:
        head = f"{head}."
    return f"{head} {NO_BINDINGS}" if not kept else head


def judged_lines(results: dict[str, Any], facts: RunFacts) -> list[str]:
    """What this run judged, a line each: the sealed steps judged one by one, or — for an
    output without bindings — the states ``prefix`` judged and the batches they name."""
    steps = steps_judged(results)
    if steps:
        return [f"Sealed steps judged one by one / sealed: {steps}."]
    counts = _counts(results, "prefix")
    if bindings_kept(results, facts) or "states_judged" not in counts:
        return []
    judged, states = int(counts["states_judged"]), facts.states
    if states is not None and states.seen > judged:  # states that changed nothing
        other = (
            "the other changed nothing: it equals the state before it"
            if states.seen - judged == 1
            else "the others changed nothing: each equals the state before it"
        )
        what = f"{judged:,} of the {states.seen:,} states {SEEN.get(states.by, 'seen')} ({other})"
    else:
        how = EVERY_STATE.get(states.by if states is not None else None, EVERY_STATE[None])
        what = f"{judged:,} — {how}"
    last = "the last judged as the whole input's"
    if counts.get("final_state_judged") != 1:
        last = "the last not judged as the whole input's (the output never settled)"
    lines = [f"States judged by prefix: {what}; {last}."]
    return [*lines, _batches_line(states, facts.states_why)]


def _span(states: StatesSeen) -> str:
    first, last = states.first_batch, states.last_batch
    return f"batch {first}" if first == last else f"batches {first}-{last}"


def _batches_line(states: StatesSeen | None, why: str) -> str:
    """Which batches the states name (from the job's checkpoint, or the tables' commits)."""
    if states is None:
        return f"Batches named: none ({why})."
    if states.by == SAMPLES and not states.checkpoint:
        return (
            "Batches named: none. The descriptor declares no windows told by a checkpoint "
            '(streaming_windows("checkpoint")), so a state is known by its index only.'
        )
    if not states.named:
        return "Batches named: none (no batch was committed when the states were taken)."
    if states.by == SAMPLES:
        n = states.in_flight
        flight = (
            f"; {n:,} {'was' if n == 1 else 'were'} read with a batch in flight (part of it may "
            "be in the state)"
            if n
            else ""
        )
        return (
            f"Batches named: {states.named:,} of {states.seen:,} states name the batches they "
            f"follow ({_span(states)} committed, from the job's checkpoint){flight}."
        )
    if states.by == BATCHES:
        return f"Batches named: every state is the batch its commits name ({_span(states)})."
    return (
        f"Batches named: {states.named:,} of {states.seen:,} states are commits that name "
        f"their batch ({_span(states)}); the others are known by their table versions."
    )


def judged_text(results: dict[str, Any]) -> list[str]:
    """What ``sealcheck run`` and ``sealcheck check`` print under the verdict: the report's
    lines (:func:`judged_lines`), from ``results.json`` alone."""
    return judged_lines(results, read_facts(results))
