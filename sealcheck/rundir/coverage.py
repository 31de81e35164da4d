"""A run's window coverage as it is stored: ``results.json``'s ``"coverage"`` (:class:`Window`
per failure window and kind of fault, judged with the run by
:func:`sealcheck.nemeses.coverage.coverage`), read back by the report and the lines printed
after the verdict, and each planned action's outcome in the history (:func:`outcomes`) — what
readers of a stored run need without building a nemesis."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

#: the key of ``results.json`` that holds the coverage
COVERAGE = "coverage"


@dataclass(frozen=True)
class Window:
    """One failure window (a failpoint) or one kind of fault action: how often it was
    planned, reached with evidence of its effect (``hit``), happened without an effect
    (``no_effect``) or with an effect nobody can see (``unobserved``), and missed (planned but
    replaced by a kill / not happened); ``evidence``: one example, a missing effect first."""

    name: str
    where: str
    planned: int
    hit: int
    missed: int
    no_effect: int = 0
    unobserved: int = 0
    evidence: str = ""
    #: why the first missed one was missed (its action's ``why``)
    why_missed: str = ""
    #: crashes that left a batch to replay whose restart committed nothing to the sink (the
    #: job's own mechanism skipped what it had applied) / committed again
    #: (:mod:`sealcheck.nemeses.restarts`), and one example (a skip first)
    replays_skipped: int = 0
    replays_changed: int = 0
    replay: str = ""


def to_json(windows: list[Window]) -> list[dict[str, Any]]:
    """``results.json``'s ``"coverage"``."""
    return [asdict(w) for w in windows]


def from_json(doc: Any) -> list[Window] | None:
    """The coverage ``results.json`` holds (None: none, or not in this form: a run judged
    before coverage was written there)."""
    if not isinstance(doc, list):
        return None
    names = {f.name for f in fields(Window)}
    try:
        return [Window(**{k: v for k, v in w.items() if k in names}) for w in doc]
    except (TypeError, AttributeError):
        return None


def outcomes(ops: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """Per planned action (its index in the schedule), what finally happened: the value of
    its last ``nemesis`` op that carries an ``outcome`` (a settled pending action's ``outcome``
    op comes after its invoke)."""
    out: dict[int, dict[str, Any]] = {}
    for op in ops:
        value = op.get("value")
        if op.get("process") != "nemesis" or not isinstance(value, dict):
            continue
        if isinstance(value.get("action"), int) and "outcome" in value:
            out[value["action"]] = value
    return out


def unreached(windows: list[Window], failpoints: dict[str, str]) -> list[str]:
    """The system's failpoints that no incarnation died at (as the failpoint's action does)."""
    return [w.name for w in windows if w.name in failpoints and w.hit == 0]


def summary(windows: list[Window], failpoints: dict[str, str]) -> list[str]:
    """The lines printed after the verdict: failpoints reached, then each other kind of
    fault reached with evidence of its effect out of those planned."""
    lines = []
    if failpoints:
        missed = unreached(windows, failpoints)
        dud = [w.name for w in windows if w.name in failpoints and not w.hit and w.no_effect]
        reached = len(failpoints) - len(missed)
        line = f"window coverage: {reached}/{len(failpoints)} failpoints reached"
        notes = [f"not reached: {', '.join(missed)}"] if missed else []
        notes += [f"happened, no effect: {', '.join(dud)}"] if dud else []
        lines.append(line + (f" ({'; '.join(notes)})" if notes else ""))
    faults = []
    for w in windows:
        if w.name in failpoints or ": " not in w.name:
            continue
        extra = [f"{w.no_effect} happened, no effect"] if w.no_effect else []
        extra += [f"{w.unobserved} effect not observable"] if w.unobserved else []
        extra += [f"{w.missed} missed"] if w.missed else []
        if w.replays_skipped or w.replays_changed:
            extra.append(f"replays: {w.replays_skipped} skipped by the job, "
                         f"{w.replays_changed} applied again")  # fmt: skip
        more = f" ({', '.join(extra)})" if extra else ""
        faults.append(f"{w.name.partition(': ')[2]} {w.hit}/{w.planned}{more}")
    if faults:
        lines.append("window coverage: faults reached with evidence: " + ", ".join(faults))
    return lines
