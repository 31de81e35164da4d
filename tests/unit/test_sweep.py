"""A sweep takes only what runs of its own archive left: containers labelled with a run
directory in it, mounts in it, processes naming a run in it — whose harness is gone; what other
archives' runs left (or what names no run) is named and left alone, with the command that
removes it. The lines name each run. (Docker and the mount table are fakes here; real
processes: tests/integration/test_cleanup_scope.py.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sealcheck.infra import lazy_disk, procs
from sealcheck.infra import sweep as sweeping
from sealcheck.infra.cleanup import Leftover, in_archive
from sealcheck.infra.containers.service import (
    OWNER_LABEL,
    RUN_DIR_LABEL,
    RUN_LABEL,
    owned_labels,
)
from sealcheck.infra.sweep import Sweep, Swept, left_alone_line, removed_line, sweep

DEAD = "4194999:0"  # no such process


class _Box:
    """A docker SDK container or network: its name, labels and whether it was removed."""

    def __init__(self, name: str, labels: dict[str, str]) -> None:
        self.name, self.attrs, self.removed = name, {"Labels": labels}, False

    def remove(self, **_: Any) -> None:
        self.removed = True


class _List:
    """The engine's list: what is not removed, and ``late`` from the second listing on (a
    container whose creation a killed harness had asked for)."""

    def __init__(self, boxes: list[_Box], late: tuple[_Box, ...] = ()) -> None:
        self.boxes, self.late, self.listed = boxes, late, 0

    def list(self, **kw: Any) -> list[_Box]:
        assert kw["filters"] == {"label": RUN_LABEL}
        self.listed += 1
        if self.listed == 2:
            self.boxes.extend(self.late)
        return [b for b in self.boxes if not b.removed]


class _Client:
    def __init__(self, boxes: list[_Box], nets: list[_Box]) -> None:
        self.containers, self.networks, self.closed = _List(boxes), _List(nets), False

    def close(self) -> None:
        self.closed = True


def _labels(run_dir: Path | None, owner: str = DEAD) -> dict[str, str]:
    labels = {RUN_LABEL: "t-1", OWNER_LABEL: owner}
    return labels if run_dir is None else {**labels, RUN_DIR_LABEL: str(run_dir)}


@pytest.fixture
def archives(tmp_path: Path) -> tuple[Path, Path]:
    """This archive (``runs``, reached through a symlink as ``link``) and another one."""
    (tmp_path / "runs").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "runs")
    return tmp_path / "runs", tmp_path / "other"


def test_only_this_archive_s_containers_mounts_and_processes_are_removed(
    tmp_path: Path, archives: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    runs, other = archives
    mine, theirs = runs / "chaos" / "20261129T101500", other / "chaos" / "20261129T090000"
    for run in (mine, theirs):
        (run / "work").mkdir(parents=True)
        (run / "test.json").write_text("{}")
    boxes = [
        _Box("kafka-mine", _labels(mine)),
        _Box("kafka-theirs", _labels(theirs)),
        _Box("fixture", _labels(None)),  # names no run: only --all takes it
        _Box("alive", _labels(mine, procs.owner_token())),  # its harness still runs
    ]
    nets = [_Box("net-mine", _labels(mine))]
    client = _Client(boxes, nets)
    monkeypatch.setattr(sweeping, "_docker", lambda: client)
    monkeypatch.setattr(sweeping, "_LATE_S", 0.0)
    mounts = [
        lazy_disk.StaleMount(str(mine / "work" / "store"), DEAD),
        lazy_disk.StaleMount(str(theirs / "work" / "store"), DEAD),
    ]
    unmounted: list[Path] = []
    monkeypatch.setattr(lazy_disk, "stale_mounts", lambda: mounts)
    monkeypatch.setattr(lazy_disk, "unmount", lambda p: unmounted.append(p) or True)
    found = [Leftover(11, str(mine), DEAD, "sleep 1"), Leftover(12, str(theirs), DEAD, "sleep 2")]
    killed: list[Path | None] = []

    def kill(gone: list[Leftover]) -> list[Leftover]:
        killed.extend(p.run_dir for p in gone)
        return gone

    monkeypatch.setattr(sweeping, "leftovers", lambda: found)
    monkeypatch.setattr(sweeping, "kill", kill)
    monkeypatch.setattr(Leftover, "run_dir", property(lambda self: Path(self.run)))

    swept = sweep(tmp_path / "link")  # the archive as given, through a symlink
    assert [(x.kind, x.what) for x in swept.removed] == [
        ("process", "pid 11: sleep 1"),
        ("mount", str(mine / "work" / "store")),
        ("container", "kafka-mine"),
        ("network", "net-mine"),
    ]
    assert {x.run for x in swept.removed} == {mine.resolve()}
    assert [b.name for b in boxes + nets if b.removed] == ["kafka-mine", "net-mine"]
    assert unmounted == [mine / "work" / "store"] and killed == [mine] and client.closed
    assert [(x.kind, x.run, x.what) for x in swept.left] == [
        ("process", theirs, "pid 12: sleep 2"),
        ("mount", theirs, str(theirs / "work" / "store")),
        ("container", theirs.resolve(), "kafka-theirs"),
        ("container", None, "fixture"),
    ]
    assert removed_line(swept) == (
        "cleaned up 1 process, 1 mount, 1 container and 1 network of "
        f"{tmp_path / 'link' / 'chaos' / '20261129T101500'}, left when its harness died"
    )
    assert left_alone_line(swept) == (
        f"left alone: 1 process, 1 mount and 1 container of {theirs} (another archive; "
        f"`sealcheck cleanup --runs {other}` removes them); 1 container naming no run "
        "(`sealcheck cleanup --all` removes it)"
    )
    every = sweep(None)  # --all: every archive's, and what names no run
    assert every.left == [] and [b.name for b in boxes if b.removed] == [
        "kafka-mine",
        "kafka-theirs",
        "fixture",
    ]


def test_the_lines_name_each_run_and_count_each_kind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = tmp_path / "runs"
    a, b = runs / "chaos" / "A", runs / "slow" / "B"
    swept = Sweep(
        runs,
        [Swept("process", a, "pid 1: x"), Swept("process", a, "pid 2: y"), Swept("mount", b, "m")],
        [
            Swept("process", tmp_path / "o" / "t" / "1", "pid 3: z"),
            Swept("process", tmp_path / "o" / "t" / "2", "pid 4: z"),
        ],
    )
    assert removed_line(swept) == (
        f"cleaned up 2 processes of {a}; 1 mount of {b}, left when their harnesses died"
    )
    assert left_alone_line(swept) == (
        f"left alone: 2 processes of 2 runs in {tmp_path / 'o'} (another archive; "
        f"`sealcheck cleanup --runs {tmp_path / 'o'}` removes them)"
    )
    nothing = Sweep(runs, [], [])
    assert removed_line(nothing) is None and left_alone_line(nothing) is None
    monkeypatch.chdir(tmp_path)  # `--runs runs`: named as given
    relative = Sweep(Path("runs"), [Swept("process", a.resolve(), "pid 1: x")], [])
    assert removed_line(relative) == (
        "cleaned up 1 process of runs/chaos/A, left when its harness died"
    )


def test_a_container_names_the_run_directory_its_processes_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(procs.RUN_ENV, raising=False)
    assert owned_labels("t-1") == {RUN_LABEL: "t-1", OWNER_LABEL: procs.owner_token()}
    monkeypatch.setenv(procs.RUN_ENV, "/srv/runs/chaos/20261129T101500")
    assert owned_labels("t-1")[RUN_DIR_LABEL] == "/srv/runs/chaos/20261129T101500"


def test_a_suite_archive_nested_in_an_archive_is_another_archive(tmp_path: Path) -> None:
    """``runs/suites/<name>/<time>/runs`` is a suite's own archive: a sweep of ``runs`` must
    leave its runs alone (their harness is the suite's), as the lines it prints say."""
    archive = tmp_path / "runs"
    mine = archive / "chaos" / "20261129T101500"
    nested = archive / "suites" / "nightly" / "20261129T020000" / "runs" / "t" / "20261129T020100"
    for run in (mine, nested):
        run.mkdir(parents=True)
        (run / "test.json").write_text("{}")
    assert in_archive(mine, archive) and in_archive(mine / "work" / "job", archive)
    assert not in_archive(nested, archive) and not in_archive(nested / "work", archive)
    assert in_archive(nested, nested.parent.parent)
    assert not in_archive(archive / "chaos", archive)  # not a run directory


def test_counting_nothing_says_nothing_and_cleanup_of_a_clean_archive_succeeds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A cleanup with nothing to remove (the common case) once crashed counting nothing."""
    from sealcheck.harness.cli.app import main

    assert sweeping.counted([]) == ""
    assert main(["cleanup", "--runs", str(tmp_path)]) == 0
    assert "0 left-running runs ended, nothing else removed" in capsys.readouterr().out


def test_a_container_created_after_the_first_listing_is_removed_too(
    archives: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    runs, _ = archives
    mine = runs / "chaos" / "20261129T101500"
    (mine / "work").mkdir(parents=True)
    (mine / "test.json").write_text("{}")
    late = _Box("sut-late", _labels(mine))
    client = _Client([_Box("kafka-mine", _labels(mine))], [])
    client.containers = _List(client.containers.boxes, late=(late,))
    monkeypatch.setattr(sweeping, "_docker", lambda: client)
    monkeypatch.setattr(sweeping, "_LATE_S", 0.0)
    monkeypatch.setattr(lazy_disk, "stale_mounts", lambda: [])
    monkeypatch.setattr(sweeping, "leftovers", lambda: [])
    swept = sweep(runs)
    assert [x.what for x in swept.removed] == ["kafka-mine", "sut-late"] and late.removed
    assert client.containers.listed == 3  # a third pass found nothing more
