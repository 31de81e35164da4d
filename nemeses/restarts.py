"""What a job did after a crash at a boundary that leaves a batch to replay (``boundary``'s
``closing`` and ``committed``: the batch's sink has, at least partly, committed and its
``commits/N`` is not written), as the lazy disk saw it: the crash point, as it kills, starts
a watch (:class:`sealcheck.infra.crash_points.Watch`) that counts the job's sink commits until
``commits/N`` is renamed into place — the restarted job's replay of batch N — and the nemesis
reports it
with its heal (:meth:`sealcheck.nemeses.api.Nemesis.findings`, the heal op's ``findings``:
``{"replayed": N, "sink_commits": k, "done": true}``). No commit: the job's own exactly-once
mechanism skipped what it had applied; some: it applied (part of) the batch again, which a
job that commits a batch in one idempotent transaction may do too — the checkers judge
whether the result is right; this only says which path the run exercised
("Antithesis-style sometimes": did the run ever exercise the job's exactly-once path).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: the key of the heal op's value that holds a nemesis's findings
FINDINGS = "findings"


@dataclass(frozen=True)
class Replay:
    """What the restart after a crash did with batch ``batch``: ``changed`` the sink (it
    committed some of the batch again) or not; ``why`` says it for people."""

    batch: int
    changed: bool
    why: str


def replays(ops: list[dict[str, Any]]) -> dict[int, Replay]:
    """Per batch a crash left to replay, what the restart did, from every heal op's findings
    (a watch not finished by then says nothing)."""
    out: dict[int, Replay] = {}
    for op in ops:
        value = op.get("value")
        if op.get("f") != "heal" or not isinstance(value, dict):
            continue
        for found in value.get(FINDINGS) or ():
            batch, commits = found.get("replayed"), found.get("sink_commits")
            if not isinstance(batch, int) or not isinstance(commits, int) or not found.get("done"):
                continue
            did = f"the restart replayed batch {batch}"
            if commits:
                why = (
                    f"{did} and committed to its sink {commits} time(s) before its commits/N: it "
                    "applied (some of) the batch again"
                )
            else:
                why = f"{did} and committed nothing to its sink: it skipped what it had applied"
            out[batch] = Replay(batch, commits > 0, why)
    return out


def replay_of(done: dict[str, Any], found: dict[int, Replay]) -> Replay | None:
    """What the restart did with the batch the settled action ``done`` (its ``replays``)
    left to replay, if the run shows it."""
    batch = done.get("replays")
    return found.get(batch) if isinstance(batch, int) else None
