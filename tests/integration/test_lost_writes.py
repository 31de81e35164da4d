"""The lost-writes nemesis end to end: the store on the lazy FUSE filesystem, an incarnation
frozen, its un-fsynced writes dropped, killed and replaced. The correct pipeline (commits
fsynced) stays VALID; the variant whose commits are not durable is caught — and only by this
nemesis: under kills and failpoints it passes, because a killed process never loses the page
cache."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from sealcheck.infra import cleanup
from sealcheck.rundir.coverage import outcomes
from tests.cli_runs import ops, runs_once

pytestmark = pytest.mark.integration

FLAGS = ("--seed", "3", "--duration", "24", "--final-timeout", "90")


CASES = {
    "correct": ("--nemesis", "lost-writes,kill"),
    "non-durable": ("--nemesis", "lost-writes,kill", "--broken", "non-durable-commits"),
    "non-durable-kills-only": ("--nemesis", "kill,failpoint", "--broken", "non-durable-commits"),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], tuple[int, str, Path]]:
    """Each case run once, when a test first asks for it (CI runs only the correct one)."""
    return runs_once(tmp_path_factory, FLAGS, CASES)


def _mounted_under(run_dir: Path) -> list[str]:
    return [m for m in Path("/proc/self/mounts").read_text().splitlines() if str(run_dir) in m]


def test_each_power_cut_froze_dropped_and_killed_and_the_run_healed(
    runs: Callable[[str], tuple[int, str, Path]],
) -> None:
    code, out, run_dir = runs("correct")
    assert code == 0, out[-3000:]
    history = ops(run_dir)
    planned = json.loads((run_dir / "test.json").read_text())["schedule"]
    final = outcomes(history)
    cuts = [final[i] for i, a in enumerate(planned) if a["f"] == "lose-unsynced"]
    assert cuts and any(c["outcome"] == "happened" for c in cuts), cuts
    killed = {e["value"]["pid"]: e["value"]["code"] for e in history if e["f"] == "sut-exit"}
    for cut in cuts:
        if cut["outcome"] == "happened":
            assert cut["frozen"] == cut["killed"] and killed[cut["killed"]] == -9, cut
            assert isinstance(cut["dropped_bytes"], int), cut
    assert any(o["f"] == "caught-up" for o in history)  # healed: restarted on what was durable
    assert not _mounted_under(run_dir)  # unmounted at the end
    assert not [p for p in cleanup.leftovers() if p.run == str(run_dir)]


@pytest.mark.nightly  # two more runs; the nemesis's effect is shown in CI above
def test_non_durable_commits_are_caught_only_by_lost_writes(
    runs: Callable[[str], tuple[int, str, Path]],
) -> None:
    code, out, run_dir = runs("non-durable")
    assert code == 1, out[-3000:]
    history = ops(run_dir)
    dropped = [
        o["value"]["dropped_bytes"]
        for o in history
        if o["f"] == "lose-unsynced" and o["type"] == "info" and "dropped_bytes" in o["value"]
    ]
    assert any(b for b in dropped if b), dropped  # committed but un-fsynced pages were lost
    results = json.loads((run_dir / "results.json").read_text())["checkers"]
    failed = {name for name, c in results.items() if c["valid"] is False}
    assert "seal_monotonic" in failed, failed  # the uppers it had reported went back
    code, out, _ = runs("non-durable-kills-only")
    assert code == 0, out[-3000:]  # kill -9 keeps the page cache: the bug stays hidden
