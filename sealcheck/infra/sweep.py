"""A sweep of one archive of runs: what runs *of that archive* whose harness died left behind
— processes (:mod:`sealcheck.infra.cleanup`), lazy mounts (:mod:`sealcheck.infra.lazy_disk`),
containers and networks (by their labels: the owner and the run directory) — is removed, and
what runs of other archives left is found, named and left alone. A run's start sweeps its own
``--runs``; ``sealcheck cleanup`` the one it is given, or every archive with ``--all``. The
lines that say what was removed and what was left name each run.

A container or mount counts as a run's by what it names: a container its run directory label
(:data:`sealcheck.infra.containers.service.RUN_DIR_LABEL`; one without it, a test fixture's or
an older Sealcheck's, names no run), a mount its mount point.
"""

from __future__ import annotations

import contextlib
import shlex
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sealcheck.infra.cleanup import in_archive, kill, leftovers, resolved
from sealcheck.infra.procs import owner_alive

#: the kinds of leftovers, in the order lines name them
KINDS = ("process", "mount", "container", "network")


@dataclass(frozen=True)
class Swept:
    """One thing a dead harness left behind (:func:`sweep`), and the run it belongs to."""

    kind: str  # one of KINDS
    run: Path | None  # its run directory, resolved (None: it names none)
    what: str  # "pid 123: sleep 120", the container's or network's name, the mount point


@dataclass
class Sweep:
    """What one :func:`sweep` removed, and what it found of other archives and left alone."""

    archive: Path | None  # the archive swept, as given (None: every archive)
    removed: list[Swept]
    left: list[Swept]


def _docker() -> Any:
    """A client of the Docker engine here; None when none answers (no containers to clean)."""
    if not Path("/var/run/docker.sock").exists():
        return None
    try:
        import docker

        client = docker.from_env(timeout=10)
        client.ping()
    except Exception:  # no engine: no containers to clean
        return None
    return client


#: passes over the labelled containers, and the wait between two (:func:`_containers`)
_PASSES, _LATE_S = 4, 1.5


def _containers(archive: Path | None) -> tuple[list[Swept], list[Swept]]:
    """Containers and networks whose owning harness is gone: those of runs of ``archive``
    removed (iptables rules live in their namespaces and go with them), the others found."""
    client = _docker()
    if client is None:
        return [], []
    from sealcheck.infra.containers.service import OWNER_LABEL, RUN_DIR_LABEL
    from sealcheck.infra.containers.topology import labelled

    removed: list[Swept] = []
    try:
        # a harness killed during a call to the engine may have a container created after the
        # first pass listed them: after a pass that removed something, another, a moment later
        for _ in range(_PASSES):
            now, left = [], []
            for x in labelled(client):
                owner = x.labels.get(OWNER_LABEL)
                if owner is None or owner_alive(owner):
                    continue
                named = x.labels.get(RUN_DIR_LABEL)
                found = Swept(x.kind, resolved(Path(named)) if named else None, x.name)
                if not in_archive(found.run, archive):
                    left.append(found)
                elif x.remove():
                    now.append(found)
            removed += now
            if not now:
                break
            time.sleep(_LATE_S)
    finally:
        client.close()
    return removed, left


def _run_holding(path: Path) -> Path | None:
    """The run directory ``path`` lies in: the nearest of its parents that holds a
    ``test.json`` (the path itself is not looked into: a dead FUSE mount answers nothing)."""
    for where in path.parents:
        with contextlib.suppress(OSError):
            if (where / "test.json").is_file():
                return where
    return None


def _mounts(archive: Path | None) -> tuple[list[Swept], list[Swept]]:
    """lazyfs mounts whose owning harness is gone: those in ``archive`` unmounted, the others
    found."""
    from sealcheck.infra.lazy_disk import stale_mounts, unmount

    removed, left = [], []
    for m in stale_mounts():
        where = Path(m.mountpoint)  # as the kernel lists it: absolute, symlinks resolved
        found = Swept("mount", _run_holding(where), m.mountpoint)
        if not in_archive(where, archive):
            left.append(found)
        elif unmount(where):
            removed.append(found)
    return removed, left


def sweep(archive: Path | None) -> Sweep:
    """Remove what runs of the archive ``archive`` (None: of every archive, and what names no
    run) whose harness died left behind — processes first (SIGKILL, with their groups), then
    lazy mounts, containers and networks — and find, without touching them, what runs of other
    archives left. A leftover that cannot be removed is not listed as removed."""
    found = leftovers()  # every archive's, read from /proc once
    mine = [p for p in found if in_archive(p.run_dir, archive)]
    removed = [Swept("process", p.run_dir, f"pid {p.pid}: {p.command}") for p in kill(mine)]
    left = [
        Swept("process", p.run_dir, f"pid {p.pid}: {p.command}") for p in found if p not in mine
    ]
    for part in (_mounts, _containers):
        gone, other = part(archive)
        removed += gone
        left += other
    return Sweep(archive, removed, left)


def _noun(kind: str, n: int) -> str:
    return kind if n == 1 else f"{kind}es" if kind == "process" else f"{kind}s"


def _join(parts: list[str]) -> str:
    if len(parts) < 2:
        return "".join(parts)  # nothing: "" (the caller says "nothing")
    return f"{', '.join(parts[:-1])} and {parts[-1]}"


def counted(items: list[Swept]) -> str:
    """``2 processes and 1 mount``: how many of each kind, in :data:`KINDS` order."""
    n = Counter(x.kind for x in items)
    return _join([f"{n[k]} {_noun(k, n[k])}" for k in KINDS if n[k]])


def _grouped(
    items: list[Swept], key: Callable[[Swept], Path | None]
) -> dict[Path | None, list[Swept]]:
    """``items`` by ``key``, in order of first appearance."""
    out: dict[Path | None, list[Swept]] = {}
    for x in items:
        out.setdefault(key(x), []).append(x)
    return out


def shown(run: Path, archive: Path | None) -> str:
    """A run directory as a line names it: under the archive as it was given
    (``runs/chaos/20261129T101500``), else absolute."""
    if archive is not None and run.is_relative_to(root := resolved(archive)):
        return str(archive / run.relative_to(root))
    return str(run)


def removed_line(swept: Sweep) -> str | None:
    """``cleaned up 2 processes and 1 mount of runs/chaos/20261129T101500, left when its
    harness died``: what the sweep removed, by run; None when nothing."""
    if not swept.removed:
        return None
    runs = _grouped(swept.removed, lambda x: x.run)
    named = [
        f"{counted(items)} of {shown(run, swept.archive)}"
        if run is not None
        else f"{counted(items)} naming no run"
        for run, items in runs.items()
    ]
    whose = "its harness" if len(runs) == 1 else "their harnesses"
    return f"cleaned up {'; '.join(named)}, left when {whose} died"


def left_alone_line(swept: Sweep) -> str | None:
    """``left alone: 1 process of /other/runs/chaos/20261129T101500 (another archive;
    `sealcheck cleanup --runs /other/runs` removes it)``: what runs of other archives left, by
    archive, and the command that removes it; None when nothing."""
    if not swept.left:
        return None
    parts = []
    homes = _grouped(swept.left, lambda x: None if x.run is None else x.run.parent.parent)
    for home, items in homes.items():
        them = "it" if len(items) == 1 else "them"
        if home is None:
            parts.append(
                f"{counted(items)} naming no run (`sealcheck cleanup --all` removes {them})"
            )
            continue
        runs = {x.run for x in items}
        of = f"of {items[0].run}" if len(runs) == 1 else f"of {len(runs)} runs in {home}"
        command = f"sealcheck cleanup --runs {shlex.quote(str(home))}"
        parts.append(f"{counted(items)} {of} (another archive; `{command}` removes {them})")
    return f"left alone: {'; '.join(parts)}"
