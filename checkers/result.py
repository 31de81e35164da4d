"""Results of checkers: anomalies that explain themselves, and Jepsen-style composition.

``valid`` is ``True``, ``False`` or ``None`` (unknown). Composition, by the one rule every
reader of ``results.json`` applies too (:func:`sealcheck.rundir.judged.run_verdict`): false
beats unknown beats true. A checker for which the system under test offers nothing to judge is
*not applicable* (:meth:`CheckResult.not_applicable`): it is left out of the composition and
never shown as valid. The JSON form (``results.json``) is documented in
``docs/formats.md``; its ``"facts"`` (what the report shows besides the verdict) in
:mod:`sealcheck.rundir.facts`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from sealcheck.rundir.facts import FACTS, RunFacts
from sealcheck.rundir.judged import NOT_APPLICABLE, VERDICT_WORDS, run_verdict

#: Examples kept per anomaly kind; counts are always complete.
MAX_EXAMPLES = 10
#: why a checker of sealed steps is unknown in a run that sealed none
NOTHING_SEALED = "no step was sealed (every upper is 0): nothing was judged"
#: why a checker that needs the bindings is not applicable to an output that keeps none
NO_BINDINGS = (
    "the output keeps no bindings (observed from outside): which offsets each state read is "
    "unknown, so its states are judged by prefix"
)


@dataclass
class Anomaly:
    """One violation, with enough context for a person to act on it."""

    kind: str
    collection: str | None = None
    key: str | None = None
    step: int | None = None
    expected: Any = None
    found: Any = None
    detail: str = ""
    #: the last nemesis action and pipeline (re)start before the step was sealed
    context: dict[str, Any] = field(default_factory=dict)


@dataclass
class CheckResult:
    """What one checker concluded.

    ``error`` says why it is not simply valid or invalid: the exception it raised, why it is
    unknown, or why it is not applicable.
    """

    name: str
    valid: bool | None
    counts: dict[str, int] = field(default_factory=dict)
    anomaly_counts: dict[str, int] = field(default_factory=dict)
    anomalies: list[Anomaly] = field(default_factory=list)
    error: str | None = None
    took_s: float = 0.0
    #: the whole traceback when the checker itself raised (for whoever fixes it)
    traceback: str | None = None
    #: False: the system under test offers nothing for this checker to judge; ``valid`` is
    #: then None and the result is left out of the run's verdict (never shown as valid)
    applicable: bool = True

    @classmethod
    def not_applicable(
        cls, name: str, why: str, counts: dict[str, int] | None = None
    ) -> CheckResult:
        """A checker that had nothing to judge because the system offers no such input
        (``why`` says what is missing). A checker that *should* have had input but got none is
        unknown instead, never this."""
        return cls(name, None, counts=dict(counts or {}), error=why, applicable=False)

    def word(self) -> str:
        """``valid`` / ``invalid`` / ``unknown`` / ``not applicable``."""
        return verdict_text(self.valid) if self.applicable else NOT_APPLICABLE

    def add_bulk(self, kind: str, total: int, examples: list[Anomaly]) -> None:
        """Count ``total`` anomalies of ``kind``, keeping the first examples."""
        if total <= 0:
            return
        n = self.anomaly_counts.get(kind, 0)
        self.anomaly_counts[kind] = n + total
        self.anomalies.extend(examples[: max(0, MAX_EXAMPLES - n)])
        self.valid = False

    def add(self, anomaly: Anomaly) -> None:
        """Count an anomaly, keeping at most :data:`MAX_EXAMPLES` examples per kind."""
        n = self.anomaly_counts.get(anomaly.kind, 0)
        self.anomaly_counts[anomaly.kind] = n + 1
        if n < MAX_EXAMPLES:
            self.anomalies.append(anomaly)
        self.valid = False


def show(raw: bytes | None) -> str | None:
    """A key or value for people: its text if UTF-8, else ``0x<hex>``; None stays None."""
    if raw is None:
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return "0x" + raw.hex()


def verdict_text(valid: bool | None) -> str:
    """``valid`` / ``invalid`` / ``unknown``."""
    return VERDICT_WORDS[valid].lower()


@dataclass
class RunResult:
    """Every checker's result and the composed verdict.

    ``input_problems`` say why the inputs cannot be trusted to be whole and the run's own; while
    there is one, the verdict is never valid (a violation found is still invalid). With no
    checker run at all (the inputs were refused) the verdict is unknown.
    """

    checkers: dict[str, CheckResult]
    input_problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: acknowledged writes in the history / counted by the harness (None: not known)
    acks: tuple[int | None, int | None] = (None, None)
    #: registered checkers that were not asked to run (a subset): VALID would claim more
    not_run: list[str] = field(default_factory=list)
    #: what the report shows besides the verdict (:mod:`sealcheck.checkers.facts`); None: not
    #: computed (``run_checkers`` alone), and then left out of ``results.json``
    facts: RunFacts | None = None

    @property
    def valid(self) -> bool | None:
        """The composed verdict of the applicable checkers (unknown when none is, and when a
        registered checker did not run: a passing subset proves only part), by the one rule
        every reader of ``results.json`` applies too
        (:func:`sealcheck.rundir.judged.run_verdict`)."""
        judged = [r.valid for r in self.checkers.values() if r.applicable]
        return run_verdict(judged, bool(self.input_problems or self.not_run))

    @property
    def not_applicable(self) -> list[str]:
        """The checkers that had nothing to judge (left out of :attr:`valid`)."""
        return [name for name, r in self.checkers.items() if not r.applicable]

    def to_json(self) -> dict[str, Any]:
        """The ``results.json`` document."""

        def enc(v: bool | None) -> bool | str:
            return "unknown" if v is None else v

        def checker(r: CheckResult) -> bool | str:
            return enc(r.valid) if r.applicable else NOT_APPLICABLE

        doc: dict[str, Any] = {
            "valid": enc(self.valid),
            "not_applicable": self.not_applicable,
            "not_run": self.not_run,
            "inputs": {
                "complete": not self.input_problems,
                "problems": self.input_problems,
                "notes": self.notes,
                "acknowledged_writes": {"read": self.acks[0], "written": self.acks[1]},
            },
            "checkers": {
                name: {**asdict(r), "valid": checker(r)} for name, r in self.checkers.items()
            },
        }
        if self.facts is not None:
            doc[FACTS] = self.facts.to_dict()
        return doc
