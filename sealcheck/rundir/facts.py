"""What the checkers found out about a run besides the verdict, as ``results.json`` carries it
under ``"facts"``: which sealed step bound the input records (a summary), how long the
acknowledged writes waited to be sealed (the seal lag and its series over the run), whether
the output keeps bindings and, for one that keeps none, the states its export holds and the
batches they name, and the failing keys' story. The checkers compute them
(:func:`sealcheck.checkers.facts.run_facts`) with the same step assignment they judge by; the
report only renders them and imports no checker.

The shape is defined once, here, below both: :class:`RunFacts` and its parts, each with
``to_dict`` / ``from_dict``. It is bounded whatever the run's size: counts, at most
:data:`MAX_POINTS` points of the lag series, and at most :data:`MAX_KEYS` stories of at most
:data:`MAX_ROWS` rows per side — never data per record. ``results.json``::

    "facts": {
      "format": 1,
      "steps": {"records": 2000, "bound": 2000, "steps": 40, "first": 0, "last": 39,
                "most": 50, "acked": 2000, "acked_bound": 2000} | null,
      "steps_why": "",                      # why "steps" is null
      "seal_lag": {"count": 2000, "p50_s": 0.5, "p99_s": 1.2, "max_s": 1.5,
                   "bucket_s": 1.0, "series": [[0.0, 0.75], [1.0, 1.5]]} | null,
      "lag_why": "",
      "bindings_kept": true | false | null, # the output keeps bindings (null: not recorded)
      "states": {"by": "samples", "seen": 42, "checkpoint": true, "named": 42,
                 "first_batch": 0, "last_batch": 41, "in_flight": 0} | null,
      "states_why": "",                     # why "states" is null
      "stories": [{"key": "k1", "why": "state-mismatch at step 4", "step": 4, "bad_step": 4,
                   "records": [{"partition": 0, "offset": 3, "value": "{...}" | null,
                                "acked_s": 1.25 | null, "step": 4 | null, "hit": true}],
                   "updates": [{"collection": "data", "value": "{...}" | null, "step": 4,
                                "diff": 1, "upper": 40, "hit": true}],
                   "more_records": 0, "more_updates": 0}],
      "story_why": ""                       # why there are no stories
    }

A run judged before the checkers recorded facts has none: :func:`read_facts` then gives a
:class:`RunFacts` whose every ``*_why`` is :data:`NOT_RECORDED`, so the report still renders.
Imports nothing else of Sealcheck.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from sealcheck.rundir.judged import is_not_applicable

#: the key of ``results.json`` that holds the facts
FACTS = "facts"
#: the version of the shape below (a reader refuses a newer one in one line)
FORMAT = 1
#: keys told, rows kept per key and side (the rest are counted), points of the lag series
MAX_KEYS, MAX_ROWS, MAX_POINTS = 3, 40, 600
#: why a run has no facts: judged before the checkers recorded them
NOT_RECORDED = (
    "not recorded for this run (it was judged before the checkers recorded it): "
    "`sealcheck check` re-judges the run and records it"
)


def _int_or_none(v: Any) -> int | None:
    return None if v is None else int(v)


def _float_or_none(v: Any) -> float | None:
    return None if v is None else float(v)


def _text_or_none(v: Any) -> str | None:
    return None if v is None else str(v)


@dataclass(frozen=True)
class StepAssignment:
    """Which sealed step first bound the input records (the assignment the checkers judge by),
    summarised: input records in the topic dump, how many a sealed step bound, how many sealed
    steps bound any (the first and last of them, and the most one step bound), and the same
    for the acknowledged writes."""

    records: int
    bound: int
    steps: int
    first: int | None
    last: int | None
    most: int
    acked: int
    acked_bound: int

    @property
    def unbound(self) -> int:
        """Input records no sealed step bound."""
        return self.records - self.bound

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> StepAssignment:
        """Read the JSON form (``TypeError`` / ``ValueError`` / ``KeyError`` when malformed)."""
        return cls(
            int(d["records"]),
            int(d["bound"]),
            int(d["steps"]),
            _int_or_none(d.get("first")),
            _int_or_none(d.get("last")),
            int(d["most"]),
            int(d["acked"]),
            int(d["acked_bound"]),
        )


@dataclass(frozen=True)
class SealLag:
    """From a write's acknowledgement to the first observation of ``data`` sealed past the
    step that bound it, over the acknowledged writes seen sealed (``count``; the percentiles
    are 0 when it is 0), and ``series``: the slowest lag of the writes acknowledged in each
    ``bucket_s`` seconds, as ``(seconds since the run started, lag)``."""

    count: int
    p50_s: float = 0.0
    p99_s: float = 0.0
    max_s: float = 0.0
    bucket_s: float = 1.0
    series: list[tuple[float, float]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {**asdict(self), "series": [[t, v] for t, v in self.series]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SealLag:
        """Read the JSON form (``TypeError`` / ``ValueError`` / ``KeyError`` when malformed)."""
        return cls(
            int(d["count"]),
            float(d.get("p50_s", 0.0)),
            float(d.get("p99_s", 0.0)),
            float(d.get("max_s", 0.0)),
            float(d.get("bucket_s", 1.0)),
            [(float(t), float(v)) for t, v in d.get("series") or []],
        )


@dataclass(frozen=True)
class StatesSeen:
    """The states of an output without bindings that its export records
    (:mod:`sealcheck.rundir.states`), summarised: how they were taken (``by``: the harness's
    samples, or Delta tables' batches or commits), how many, whether the job's checkpoint was
    read at each, how many name a batch (the first and last batch named), and how many were
    read while a batch was in flight (planned, not yet committed)."""

    by: str
    seen: int
    checkpoint: bool
    named: int
    first_batch: int | None
    last_batch: int | None
    in_flight: int

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> StatesSeen:
        """Read the JSON form (``TypeError`` / ``ValueError`` / ``KeyError`` when malformed)."""
        return cls(
            str(d["by"]),
            int(d["seen"]),
            bool(d.get("checkpoint")),
            int(d["named"]),
            _int_or_none(d.get("first_batch")),
            _int_or_none(d.get("last_batch")),
            int(d.get("in_flight", 0)),
        )


@dataclass
class StoryRecord:
    """One input record of a failing key: where it is in Kafka, its value (None: a tombstone;
    cut to a readable length), when it was acknowledged (None: never), the step that bound it
    (None: none), and whether it is highlighted (bound at the key's first bad step)."""

    partition: int
    offset: int
    value: str | None
    acked_s: float | None
    step: int | None
    hit: bool = False

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> StoryRecord:
        """Read the JSON form."""
        return cls(
            int(d["partition"]),
            int(d["offset"]),
            _text_or_none(d.get("value")),
            _float_or_none(d.get("acked_s")),
            _int_or_none(d.get("step")),
            bool(d.get("hit", False)),
        )


@dataclass
class StoryUpdate:
    """One persisted update of a failing key: collection, value (None: null), step, diff, the
    collection's upper (the update is sealed when ``step < upper``) and whether it is
    highlighted (the key's first bad update)."""

    collection: str
    value: str | None
    step: int
    diff: int
    upper: int
    hit: bool = False

    @property
    def sealed(self) -> bool:
        """Whether the update's step is sealed."""
        return self.step < self.upper

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> StoryUpdate:
        """Read the JSON form."""
        return cls(
            str(d["collection"]),
            _text_or_none(d.get("value")),
            int(d["step"]),
            int(d["diff"]),
            int(d["upper"]),
            bool(d.get("hit", False)),
        )


@dataclass
class KeyStory:
    """One failing key: its records in Kafka and its updates in the store, in order (at most
    :data:`MAX_ROWS` of each; ``more_*`` counts the rest)."""

    key: str
    #: the first anomaly on this key, in words ("state-mismatch at step 4")
    why: str
    #: the step of the first anomaly on this key
    step: int | None = None
    #: the first step at which the key's persisted ``data`` updates disagree with the model
    #: (None: no disagreement found there; the anomaly's step is highlighted instead)
    bad_step: int | None = None
    records: list[StoryRecord] = field(default_factory=list)
    updates: list[StoryUpdate] = field(default_factory=list)
    more_records: int = 0
    more_updates: int = 0

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> KeyStory:
        """Read the JSON form (``TypeError`` / ``ValueError`` / ``KeyError`` when malformed)."""
        return cls(
            str(d["key"]),
            str(d.get("why", "")),
            _int_or_none(d.get("step")),
            _int_or_none(d.get("bad_step")),
            [StoryRecord.from_dict(r) for r in d.get("records") or []],
            [StoryUpdate.from_dict(u) for u in d.get("updates") or []],
            int(d.get("more_records", 0)),
            int(d.get("more_updates", 0)),
        )


@dataclass
class RunFacts:
    """Everything of :mod:`this module <sealcheck.rundir.facts>` for one run. A fact that is
    None (or no stories) says why in its ``*_why``."""

    steps: StepAssignment | None = None
    steps_why: str = ""
    seal_lag: SealLag | None = None
    lag_why: str = ""
    stories: list[KeyStory] = field(default_factory=list)
    story_why: str = ""
    #: whether the output keeps bindings (which offsets each step read); None: not recorded
    bindings_kept: bool | None = None
    #: the states of an output without bindings (None: it keeps bindings, or not recorded)
    states: StatesSeen | None = None
    states_why: str = ""

    @classmethod
    def missing(cls, why: str) -> RunFacts:
        """No fact at all, each saying ``why``."""
        return cls(steps_why=why, lag_why=why, story_why=why, states_why=why)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (``results.json``'s ``"facts"``)."""
        return {
            "format": FORMAT,
            "steps": None if self.steps is None else self.steps.to_dict(),
            "steps_why": self.steps_why,
            "seal_lag": None if self.seal_lag is None else self.seal_lag.to_dict(),
            "lag_why": self.lag_why,
            "stories": [s.to_dict() for s in self.stories],
            "story_why": self.story_why,
            "bindings_kept": self.bindings_kept,
            "states": None if self.states is None else self.states.to_dict(),
            "states_why": self.states_why,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RunFacts:
        """Read the JSON form (``TypeError`` / ``ValueError`` / ``KeyError`` when malformed)."""
        if int(d.get("format", FORMAT)) > FORMAT:
            raise ValueError(f"format {d['format']} is newer than this Sealcheck's {FORMAT}")
        steps, lag, states = d.get("steps"), d.get("seal_lag"), d.get("states")
        kept = d.get("bindings_kept")
        return cls(
            None if steps is None else StepAssignment.from_dict(steps),
            str(d.get("steps_why", "")),
            None if lag is None else SealLag.from_dict(lag),
            str(d.get("lag_why", "")),
            [KeyStory.from_dict(s) for s in d.get("stories") or []],
            str(d.get("story_why", "")),
            None if kept is None else bool(kept),
            None if states is None else StatesSeen.from_dict(states),
            str(d.get("states_why", "")),
        )


def bindings_kept(results: dict[str, Any], facts: RunFacts) -> bool:
    """Whether the output keeps bindings, as the facts say — or, for a run judged before they
    said so, as ``sealed_state`` does (not applicable only to an output without them)."""
    if facts.bindings_kept is not None:
        return facts.bindings_kept
    return not is_not_applicable((results.get("checkers") or {}).get("sealed_state"))


def read_facts(results: dict[str, Any]) -> RunFacts:
    """The facts of a ``results.json`` document; never raises. Without any (a run judged
    before they were recorded) or unreadable, every fact says why and how to get them."""
    raw = results.get(FACTS)
    if raw is None:
        return RunFacts.missing(NOT_RECORDED)
    try:
        if not isinstance(raw, dict):
            raise TypeError(f"an object was expected, not {type(raw).__name__}")
        return RunFacts.from_dict(raw)
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        return RunFacts.missing(
            f"results.json's facts cannot be read ({type(exc).__name__}: {exc}): "
            "`sealcheck check` re-judges the run and records them again"
        )
