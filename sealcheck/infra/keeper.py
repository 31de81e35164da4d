"""The keeper of a ``--leave-running`` run: a small detached process that owns the run's
children in the harness's place, so they outlive the harness without looking like leftovers.

Every process of such a run carries the keeper's :func:`~sealcheck.infra.procs.owner_token` as its
owner
(and lazy mounts name it), so any cleanup — this version's or an older one's — sees a live
owner and leaves them alone. The keeper itself carries no owner. It watches the harness:

* the harness exits having written ``left-running.json``: the keeper stays, until
  ``sealcheck cleanup`` ends it with the rest (SIGTERM);
* the harness exits any other way (a crash, ``kill -9``): the keeper SIGKILLs every process it
  owns and unmounts its lazy disks, as ``PR_SET_PDEATHSIG`` would have, and exits.

Run as ``python -m sealcheck.infra.keeper HARNESS_TOKEN RUN_DIR``
(:func:`sealcheck.infra.procs.mark_children`).
"""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path

from sealcheck.infra.left_running import LEFT_RUNNING, cleanup_command
from sealcheck.infra.procs import owner_alive, owner_token


def keep(harness: str, run_dir: Path, poll_s: float = 0.5) -> int:
    """Watch ``harness`` (a token); then stay (the run was left running) or end what this
    process owns. Returns the exit code."""
    while owner_alive(harness):
        time.sleep(poll_s)
    if (run_dir / LEFT_RUNNING).is_file():
        until = cleanup_command(run_dir)
        print(f"the harness left {run_dir} running; keeping it until `{until}`")
        sys.stdout.flush()
        while (run_dir / LEFT_RUNNING).is_file():
            time.sleep(5 * poll_s)  # ended: cleanup renamed the record (and signals us)
        return 0
    from sealcheck.infra.cleanup import end_owned
    from sealcheck.infra.lazy_disk import lazy_mounts, unmount

    me = owner_token()
    gone = end_owned(me)
    mounts = [m.mountpoint for m in lazy_mounts() if m.owner == me]
    for mount in mounts:
        unmount(Path(mount))
    print(f"the harness exited without leaving {run_dir} running: killed {len(gone)} processes")
    print(f"unmounted {mounts}" if mounts else "no lazy mounts")
    return 0


def main(argv: list[str]) -> int:
    """``HARNESS_TOKEN RUN_DIR``; SIGTERM and SIGINT end the keeper at once."""
    if len(argv) != 2:
        print("usage: python -m sealcheck.infra.keeper HARNESS_TOKEN RUN_DIR", file=sys.stderr)
        return 254
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: sys.exit(0))
    return keep(argv[0], Path(argv[1]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
