"""Finding and removing the processes runs whose harness died left behind, and ending runs
left running on purpose.

Every process a run starts inherits two environment variables: ``SEALCHECK_RUN`` (the run
directory) and ``SEALCHECK_OWNER`` (``<pid>:<start time>`` of the harness process). A process
whose owner is gone — no such pid, or a pid reused by a process with another start time — is
a leftover. ``PR_SET_PDEATHSIG`` already kills direct children when the harness dies; this
catches the rest (grandchildren, processes started by a thread that had exited). Leftovers are
taken by archive of runs (:func:`leftovers`, :func:`in_archive`); a run's start and ``sealcheck
cleanup`` sweep one archive's processes, containers and lazy mounts (:mod:`sealcheck.infra.sweep`).

A run left running on purpose (``--leave-running``: its directory holds
``left-running.json``, :mod:`sealcheck.infra.left_running`) is no leftover: only
:func:`end_left_running` (``sealcheck cleanup``) ends it.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from sealcheck.infra.left_running import left_running_root
from sealcheck.infra.procs import OWNER_ENV, RUN_ENV, owner_alive, start_time


@dataclass(frozen=True)
class Leftover:
    """A process of a run whose harness is gone."""

    pid: int
    run: str  # its SEALCHECK_RUN as written ("?": none)
    owner: str
    command: str

    @cached_property
    def run_dir(self) -> Path | None:
        """The run directory it names, absolute with symlinks resolved (None: it names
        none); looked up once."""
        return None if self.run == "?" else resolved(run_dir_of(self.pid, self.run))


def _environ(pid: int) -> dict[str, str]:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    out = {}
    for item in raw.split(b"\0"):
        key, sep, value = item.partition(b"=")
        if sep and key in (RUN_ENV.encode(), OWNER_ENV.encode()):
            out[key.decode()] = value.decode(errors="replace")
    return out


def resolved(path: Path) -> Path:
    """``path`` absolute with its symlinks resolved, as far as they can be (how leftovers
    and archives are compared)."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # a loop of symlinks: as written, made absolute
        return Path(os.path.abspath(path))


def run_dir_of(pid: int, run: str) -> Path:
    """The run directory a process names in ``SEALCHECK_RUN``, made absolute from the
    process's own working directory (``--runs`` may be relative)."""
    path = Path(run)
    if not path.is_absolute():
        try:
            path = Path(os.readlink(f"/proc/{pid}/cwd")) / path
        except OSError:
            path = path.absolute()
    return path


def tagged() -> list[Leftover]:
    """Every process tagged by a run (``SEALCHECK_OWNER``), its owner alive or not."""
    found = []
    me = os.getpid()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        env = _environ(int(entry.name))
        owner = env.get(OWNER_ENV)
        if owner is None:
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        found.append(Leftover(int(entry.name), env.get(RUN_ENV, "?"), owner, cmd.strip()[:160]))
    return found


def in_archive(path: Path | None, archive: Path | None) -> bool:
    """Whether ``path`` (a run directory, a mount point) lies in a run of the archive of runs
    ``archive`` — in ``<archive>/<test>/<time>``, which holds the run's ``test.json`` —,
    symlinks resolved. A path of an archive nested in it (a suite's, ``runs/suites/<name>/
    <time>/runs``) is another archive's. Every path does when ``archive`` is None (every
    archive), and None (naming no run) only then."""
    if archive is None:
        return True
    if path is None:
        return False
    found, home = resolved(path), resolved(archive)
    if not found.is_relative_to(home):
        return False
    parts = found.relative_to(home).parts
    return len(parts) >= 2 and (home / parts[0] / parts[1] / "test.json").is_file()


def leftovers(archive: Path | None = None) -> list[Leftover]:
    """Processes tagged by a run whose owner (harness) is no longer alive, of runs of
    ``archive`` only when given, except those of a run left running on purpose
    (``--leave-running``; :func:`end_left_running` ends them)."""
    return [
        p
        for p in tagged()
        if not owner_alive(p.owner)
        and (p.run == "?" or left_running_root(run_dir_of(p.pid, p.run)) is None)
        and in_archive(p.run_dir, archive)
    ]


def _kill_groups(pids: list[int], sig: int) -> None:
    """``sig`` to each process's group (never our own) and to the process itself."""
    mine = os.getpgid(0)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            group = os.getpgid(pid)
            if group != mine:
                os.killpg(group, sig)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def end_owned(owner: str | None = None) -> list[Leftover]:
    """SIGKILL every process (and its group) that ``owner`` (this harness's children's owner
    by default, :func:`sealcheck.infra.procs.owner`) started: a ``--leave-running`` run that ends
    any
    other way than leaving them running calls this after its teardown, since its children do
    not die with it."""
    from sealcheck.infra.procs import owner as children_owner

    token = owner or children_owner()
    mine = [p for p in tagged() if p.owner == token]
    _kill_groups([p.pid for p in mine], signal.SIGKILL)
    return mine


def cleanup(archive: Path | None = None) -> list[Leftover]:
    """SIGKILL every leftover (of runs of ``archive`` only, when given) and its process group;
    return what was killed."""
    return kill(leftovers(archive))


def kill(found: list[Leftover]) -> list[Leftover]:
    """SIGKILL each of ``found`` and its process group; return them."""
    _kill_groups([item.pid for item in found], signal.SIGKILL)
    return found


@dataclass
class Ended:
    """What :func:`end_left_running` did to one left-running run."""

    run_dir: Path
    processes: list[str]  # "pid 123 (kafka-1): java …"
    mounts: list[str]
    removed: str | None  # the run's work directory, once removed
    errors: list[str]


def _gone(pid: int, start: str) -> bool:
    """Whether the process ``pid`` that started at ``start`` has exited (or is a zombie)."""
    from sealcheck.infra.procs import proc_state

    return not owner_alive(f"{pid}:{start}") or proc_state(pid) in "XZ"


def _wait_gone(procs: dict[int, str], timeout_s: float) -> None:
    import time

    deadline = time.monotonic() + timeout_s
    while any(not _gone(p, s) for p, s in procs.items()) and time.monotonic() < deadline:
        time.sleep(0.1)


def _stop(procs: dict[int, str], timeout_s: float) -> None:
    """SIGTERM (a clean stop: Kafka's controlled shutdown, the incarnation between steps),
    SIGKILL after ``timeout_s``; stopped (frozen) ones are continued first."""
    live = [p for p, s in procs.items() if not _gone(p, s)]
    _kill_groups(live, signal.SIGCONT)
    _kill_groups(live, signal.SIGTERM)
    _wait_gone(procs, timeout_s)
    _kill_groups([p for p, s in procs.items() if not _gone(p, s)], signal.SIGKILL)
    _wait_gone(procs, 5.0)


def left_running_runs(archives: Iterable[Path] = (), within: Path | None = None) -> list[Path]:
    """Left-running run directories: named by a live process or a lazy mount, or recorded in
    ``<archive>/<test>/<time>/`` of one of ``archives``; only those in the archive ``within``
    when given."""
    from sealcheck.infra.lazy_disk import lazy_mounts
    from sealcheck.infra.left_running import LEFT_RUNNING

    found: set[Path] = set()
    for proc in tagged():
        root = left_running_root(run_dir_of(proc.pid, proc.run)) if proc.run != "?" else None
        if root is not None:
            found.add(root)
    for mount in lazy_mounts():
        root = left_running_root(Path(mount.mountpoint))
        if root is not None:
            found.add(root)
    for archive in archives:
        found.update(p.parent.absolute() for p in archive.glob(f"*/*/{LEFT_RUNNING}"))
    return sorted(r for r in found if in_archive(r, within))


def end_left_running(run_dir: Path, timeout_s: float = 20.0) -> Ended:
    """End one run left running: stop its processes (the record's, and every process naming
    the run), unmount its lazy disks, keep the brokers' final logs, remove its ``work/`` and
    rename the record ``left-running.ended.json``. Keeps going past errors; ending a run that
    is already ended does nothing."""
    import json
    import shutil
    import time

    from sealcheck.infra import lazy_disk
    from sealcheck.infra.left_running import ENDED, LEFT_RUNNING, LeftRunningError, read

    ended = Ended(run_dir, [], [], None, [])
    record = None
    try:
        record = read(run_dir / LEFT_RUNNING)
    except LeftRunningError as exc:
        ended.errors.append(str(exc))
    roles = {p.pid: p.role for p in record.processes} if record else {}
    procs: dict[int, str] = {}  # pid -> start time: a reused pid is never signalled
    for p in record.processes if record else ():
        if not _gone(p.pid, p.start):
            procs[p.pid] = p.start
            ended.processes.append(f"pid {p.pid} ({p.role}): {p.command[:100]}")
    for proc in tagged():  # and whatever else names the run (e.g. a restarted Spark server)
        if proc.pid in procs or proc.run == "?":
            continue
        start = start_time(proc.pid)
        if start is None or left_running_root(run_dir_of(proc.pid, proc.run)) != run_dir:
            continue
        procs[proc.pid] = start
        ended.processes.append(f"pid {proc.pid} (process): {proc.command[:100]}")
    daemons = {p: s for p, s in procs.items() if roles.get(p) == "lazyfs"}
    try:  # the system and Kafka first, while their disks are still mounted
        _stop({p: s for p, s in procs.items() if p not in daemons}, timeout_s)
    except Exception as exc:
        ended.errors.append(f"stopping processes: {type(exc).__name__}: {exc}")
    mounts = set(record.mounts if record else ())
    mounts |= {
        m.mountpoint
        for m in lazy_disk.lazy_mounts()
        if left_running_root(Path(m.mountpoint)) == run_dir
    }
    for mount in sorted(mounts):
        try:
            if lazy_disk.unmount(Path(mount)):
                ended.mounts.append(mount)
        except Exception as exc:
            ended.errors.append(f"unmounting {mount}: {type(exc).__name__}: {exc}")
    try:
        _stop(procs, timeout_s)  # what is left: the lazy disks' daemons
    except Exception as exc:
        ended.errors.append(f"stopping processes: {type(exc).__name__}: {exc}")
    for src, dst in record.logs if record else ():
        with contextlib.suppress(OSError):
            shutil.copyfile(src, dst)
    work = run_dir / "work"
    still = [
        m.mountpoint for m in lazy_disk.lazy_mounts() if Path(m.mountpoint).is_relative_to(work)
    ]
    if still:
        ended.errors.append(f"kept {work}: {', '.join(still)} is still mounted")
    elif work.exists():
        shutil.rmtree(work, ignore_errors=True)
        ended.removed = str(work)
    try:
        doc = json.loads((run_dir / LEFT_RUNNING).read_text())
        doc["ended"] = {
            "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "processes": ended.processes,
            "mounts": ended.mounts,
            "errors": ended.errors,
        }
        (run_dir / ENDED).write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
        (run_dir / LEFT_RUNNING).unlink()
    except FileNotFoundError:
        pass  # ended meanwhile
    except (OSError, ValueError):  # unreadable: renamed as it is
        with contextlib.suppress(OSError):
            (run_dir / LEFT_RUNNING).replace(run_dir / ENDED)
    return ended
