"""The fault phase (the session's phase that runs the schedule) with fake nemeses: every planned
action happens, fails or says why not, and a pending one is settled before the phase ends."""

from __future__ import annotations

from typing import Any

from sealcheck.harness.run.faults import FaultPhase
from sealcheck.nemeses import Action


class _History:
    def __init__(self) -> None:
        self.ops: list[tuple[str, str, str, dict[str, Any]]] = []

    def append(self, process: str, type_: str, f: str, value: Any = None) -> None:
        self.ops.append((process, type_, f, value))

    def outcomes(self) -> dict[int, str]:
        return {v["action"]: v["outcome"] for p, t, f, v in self.ops if f == "outcome"}


class _Display:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def log(self, line: str) -> None:
        self.lines.append(line)

    def update(self, **changes: Any) -> None:
        pass


class _Nemesis:
    """``arm`` is left pending and resolved as happened; ``boom`` raises; others happen."""

    def __init__(self) -> None:
        self.resolved: list[float] = []

    def invoke(self, action: Action, target: Any) -> dict[str, Any]:
        if action.f == "boom":
            raise OSError("no such device")
        return {"outcome": "pending"} if action.f == "arm" else {}

    def resolve(self, action: Action, target: Any, waited_s: float) -> dict[str, Any]:
        self.resolved.append(waited_s)
        return {"outcome": "happened", "fired": True}


def _phase(schedule: list[Action]) -> tuple[FaultPhase, _History, _Nemesis, list[float]]:
    history, nemesis, seen = _History(), _Nemesis(), []
    phase = FaultPhase(
        schedule,
        {"n": nemesis},
        object(),
        0.4,
        history,
        _Display(),
        seen.append,  # type: ignore[arg-type]
    )
    return phase, history, nemesis, seen


def test_every_action_happens_fails_or_is_settled() -> None:
    schedule = [Action(0.0, "n", "arm"), Action(0.05, "n", "boom"), Action(0.1, "n", "kill")]
    phase, history, nemesis, seen = _phase(schedule)
    phase.run()
    assert history.ops[0][2] == "faults-start"
    assert [f for p, t, f, v in history.ops if t == "invoke"] == ["arm", "boom", "kill"]
    failed = next(v for p, t, f, v in history.ops if t == "fail")
    assert failed["why"] == "OSError: no such device" and failed["action"] == 1
    assert history.outcomes() == {0: "happened"}  # the armed one, settled when the next was due
    assert len(nemesis.resolved) == 1 and seen  # the progress was shown between actions


def test_no_incarnation_no_faults_each_says_why() -> None:
    phase, history, _, _ = _phase([Action(0.0, "n", "kill"), Action(0.1, "n", "arm")])
    phase.skip_all("nothing could be started")
    assert history.outcomes() == {0: "skipped", 1: "skipped"}
    assert all(v["why"] == "nothing could be started" for *_, v in history.ops)
