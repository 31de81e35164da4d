"""Finding and removing what runs whose harness died left behind.

Every process a run starts inherits two environment variables: ``SEALCHECK_RUN`` (the run
directory) and ``SEALCHECK_OWNER`` (``<pid>:<start time>`` of the harness process). A process
whose owner is gone — no such pid, or a pid reused by a process with another start time — is
a leftover. ``PR_SET_PDEATHSIG`` already kills direct children when the harness dies; this
catches the rest (grandchildren, processes started by a thread that had exited). Containers
and iptables rules join the list with the containers backend, and lazy FUSE mounts (whose
daemon died with the harness) with the lost-writes nemesis.
"""

from __future__ import annotations

import contextlib
import os
import signal
from dataclasses import dataclass
from pathlib import Path

from infra.procs import OWNER_ENV, RUN_ENV, owner_alive


@dataclass(frozen=True)
class Leftover:
    """A process of a run whose harness is gone."""

    pid: int
    run: str
    owner: str
    command: str


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


def leftovers() -> list[Leftover]:
    """Processes tagged by a run whose owner (harness) is no longer alive."""
    found = []
    me = os.getpid()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        env = _environ(int(entry.name))
        owner = env.get(OWNER_ENV)
        if owner is None or owner_alive(owner):
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        found.append(Leftover(int(entry.name), env.get(RUN_ENV, "?"), owner, cmd.strip()[:160]))
    return found


def cleanup() -> list[Leftover]:
    """SIGKILL every leftover and its process group; return what was killed."""
    gone = leftovers()
    mine = os.getpgid(0)
    for item in gone:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            group = os.getpgid(item.pid)
            if group != mine:  # never our own process group
                os.killpg(group, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(item.pid, signal.SIGKILL)
    return gone


def cleanup_containers() -> list[str]:
    """Remove containers and networks of runs whose harness is gone (by label); nothing when
    no Docker engine answers here. iptables rules live in the containers' own network
    namespaces, so they go with the containers."""
    if not Path("/var/run/docker.sock").exists():
        return []
    try:
        import docker

        client = docker.from_env(timeout=10)
        client.ping()
    except Exception:  # no engine: no containers to clean
        return []
    from infra.containers.topology import remove_labelled

    try:
        return remove_labelled(client, owner_alive=owner_alive)
    finally:
        client.close()


def cleanup_mounts() -> list[str]:
    """Unmount lazyfs mounts (:mod:`infra.lazy_disk`) of runs whose harness is gone."""
    from infra.lazy_disk import unmount_stale

    return unmount_stale()
