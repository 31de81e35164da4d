"""Window coverage: which of the system's failure windows and commit boundaries a run really
reached — computed when the run is judged and written into ``results.json`` (``"coverage"``,
:func:`judged`); the report and the CLI only render it.

A window or fault counts as *reached* only with evidence of its effect
(``sealcheck.nemeses.evidence``):
a failpoint is hit when an incarnation died there as its action does — the supervisor's
``sut-exit`` op names the failpoint and the exit matches ``crash`` (SIGKILL); a kill when
the incarnation it killed exited by SIGKILL; a power cut when it dropped un-fsynced bytes; a
boundary when the filesystem's record of the call shows it landed there; and so on. An action
that happened without that evidence is counted apart ("happened, no effect"), and so is one
whose effect cannot be seen ("effect not observable"). Planned arming that never fired and
actions that did not happen are *missed*, with the first reason recorded (``why_missed``:
"not reached: no before rename #1 of ... in 30.0s"). The windows a system has come from
``test.json``'s ``windows`` (its failpoints, written at the start of the run).

``results.json``'s form (:func:`sealcheck.rundir.coverage.to_json`, where the stored form and
its readers live)::

    "coverage": [{"name": "boundary: after-offsets:closing", "where": "", "planned": 1,
                  "hit": 1, "missed": 0, "no_effect": 0, "unobserved": 0,
                  "evidence": "process group 4518 killed before the rename to ...",
                  "why_missed": "", "replays_skipped": 1, "replays_changed": 0,
                  "replay": "the restart replayed batch 89 and committed nothing to its sink: ..."},
                  ...]
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from sealcheck.nemeses.evidence import exit_matches, judge
from sealcheck.nemeses.restarts import Replay, replay_of, replays
from sealcheck.rundir.coverage import Window, outcomes
from sealcheck.rundir.names import SUT_EXIT, current_action


def _aim(value: dict[str, Any]) -> str | None:
    """The window or boundary an action aims at (counted per aim), if any."""
    aim = value.get("window") or value.get("boundary")
    return str(aim) if aim else None


@dataclass
class _Tally:
    planned: int = 0
    hit: int = 0
    missed: int = 0
    no_effect: int = 0
    unobserved: int = 0
    evidence: str = ""
    why_missed: str = ""
    replays_skipped: int = 0
    replays_changed: int = 0
    replay: str = ""

    def replayed(self, replay: Replay | None) -> None:
        """Count what the restart after this crash did with its batch, if known."""
        if replay is None:
            return
        self.replays_changed += replay.changed
        self.replays_skipped += not replay.changed
        if not self.replay or not replay.changed:  # a skip shown first: the mechanism ran
            self.replay = replay.why

    def window(self, name: str, where: str, hit: int | None = None) -> Window:
        """The tally as a row (``hit``: counted elsewhere, for a failpoint)."""
        counts = asdict(self) | ({} if hit is None else {"hit": hit})
        return Window(name, where, **counts)

    def add(self, happened: bool, bit: dict[str, Any] | None, why: str = "") -> None:
        self.planned += 1
        if not happened or bit is None:
            self.missed += not happened
            if not happened and not self.why_missed:
                self.why_missed = why
            return
        got = bit.get("effect")
        self.hit += got is True
        self.no_effect += got is False
        self.unobserved += got is None
        if got is not True or not self.evidence:
            self.evidence = str(bit.get("evidence", ""))


def coverage(meta: dict[str, Any], ops: list[dict[str, Any]]) -> list[Window]:
    """Every window of the system (failpoints first), then every other kind of planned action,
    with what each restart did with a batch a boundary crash left to replay."""
    schedule = [current_action(a) for a in meta.get("schedule", [])]  # old names as now
    settled = outcomes(ops)
    exits = [o.get("value", {}) for o in ops if o.get("f") == SUT_EXIT]
    hit = Counter(
        str(v["failpoint"])
        for v in exits
        if v.get("failpoint") and exit_matches("crash", v.get("code"))
    )
    after = _exits_after(ops)
    replayed = replays(ops)
    points: dict[str, _Tally] = {}
    others: dict[str, _Tally] = {}
    for i, action in enumerate(schedule):
        done = settled.get(i, {})
        happened = done.get("outcome") == "happened"
        bit = (
            judge(str(action.get("f")), action.get("value", {}), done, after(i))
            if happened
            else None
        )
        point = action.get("value", {}).get("failpoint")
        why = str(done.get("why") or ("never settled" if not done else ""))
        if action.get("f") == "arm-failpoint" and point:
            points.setdefault(point, _Tally()).add(happened, bit, why)
        elif aim := _aim(action.get("value", {})):  # per window or boundary, as failpoints
            # a crash aimed there is named by the aim alone; another action made there (an
            # upgrade stopping a version in a window) by what it did and where
            f = str(action.get("f"))
            what = aim if f.startswith("crash-") else f"{f} in {aim}"
            tally = others.setdefault(f"{action['nemesis']}: {what}", _Tally())
            tally.add(happened, bit, why)
            if happened:
                tally.replayed(replay_of(done, replayed))
        elif action.get("f") not in ("heal",):
            key = f"{action['nemesis']}: {action['f']}"
            others.setdefault(key, _Tally()).add(happened, bit, why)
    windows: dict[str, str] = dict(meta.get("windows", {}))
    for point in sorted(set(points) | set(hit)):
        windows.setdefault(point, "")
    out = [points.get(p, _Tally()).window(p, where, hit[p]) for p, where in windows.items()]
    return out + [t.window(k, "") for k, t in sorted(others.items())]


def judged(run_dir: Path) -> list[Window] | None:
    """The run's coverage from its ``test.json`` and history, as the judge writes it into
    ``results.json`` (None: a run without a readable history or test, whose coverage is not
    known)."""
    import json

    from sealcheck.rundir.history import History, HistoryError
    from sealcheck.rundir.regular import read_text

    try:  # only the run's own regular files: a FIFO in test.json's place would never end
        meta = json.loads(read_text(run_dir / "test.json", run_dir))
        ops = History.load(run_dir / "history.jsonl", acks=False).ops
    except (OSError, ValueError, HistoryError):
        return None
    return coverage(meta, ops) if isinstance(meta, dict) else None


def _exits_after(ops: list[dict[str, Any]]) -> Callable[[int], list[dict[str, Any]]]:
    """For planned action ``i``: the supervisor's ``sut-exit`` values recorded after its
    first op (its invoke), in order."""
    first: dict[int, int] = {}
    exits: list[tuple[int, dict[str, Any]]] = []
    for n, op in enumerate(ops):
        value = op.get("value")
        if not isinstance(value, dict):
            continue
        if op.get("f") == SUT_EXIT:
            exits.append((n, value))
        elif op.get("process") == "nemesis" and isinstance(value.get("action"), int):
            first.setdefault(value["action"], n)
    starts = [n for n, _ in exits]

    def after(i: int) -> list[dict[str, Any]]:
        return [v for _, v in exits[bisect_left(starts, first.get(i, len(ops))) :]]

    return after
