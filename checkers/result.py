"""Results of checkers: anomalies that explain themselves, and Jepsen-style composition.

``valid`` is ``True``, ``False`` or ``None`` (unknown). Composition: false beats unknown beats
true. The JSON form (``results.json``) is documented in ``docs/architecture.md``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

#: Examples kept per anomaly kind; counts are always complete.
MAX_EXAMPLES = 10


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
    """What one checker concluded."""

    name: str
    valid: bool | None
    counts: dict[str, int] = field(default_factory=dict)
    anomaly_counts: dict[str, int] = field(default_factory=dict)
    anomalies: list[Anomaly] = field(default_factory=list)
    error: str | None = None
    took_s: float = 0.0
    #: the whole traceback when the checker itself raised (for whoever fixes it)
    traceback: str | None = None

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


def compose(values: list[bool | None]) -> bool | None:
    """False beats unknown beats true (an empty list is true)."""
    if any(v is False for v in values):
        return False
    if any(v is None for v in values):
        return None
    return True


def verdict_text(valid: bool | None) -> str:
    """``valid`` / ``invalid`` / ``unknown``."""
    return {True: "valid", False: "invalid", None: "unknown"}[valid]


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

    @property
    def valid(self) -> bool | None:
        """The composed verdict."""
        if not self.checkers:
            return None
        verdict = compose([r.valid for r in self.checkers.values()])
        return None if verdict is True and self.input_problems else verdict

    def to_json(self) -> dict[str, Any]:
        """The ``results.json`` document."""

        def enc(v: bool | None) -> bool | str:
            return "unknown" if v is None else v

        return {
            "valid": enc(self.valid),
            "inputs": {
                "complete": not self.input_problems,
                "problems": self.input_problems,
                "notes": self.notes,
                "acknowledged_writes": {"read": self.acks[0], "written": self.acks[1]},
            },
            "checkers": {
                name: {**asdict(r), "valid": enc(r.valid)} for name, r in self.checkers.items()
            },
        }
