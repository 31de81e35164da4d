"""A run on a broker it did not start: a pytest session's (issue 52).

A chaos run starts brokers of its own. The pytest plugin offers its session's broker instead
(one per session, so one per pytest-xdist worker) through the environment variable
:data:`SHARED_KAFKA`; a run takes it only when nothing in the run could tell the difference:

* the local backend, with one broker (``brokers = 1``);
* no nemesis of the run acts on a broker (:attr:`sealcheck.nemeses.api.Nemesis.roles` has no
  ``broker``), so the fault schedule, planned before this choice, is the same either way;
* no broker on a lazy disk, and nothing left running after the run (``--leave-running``).

A run that borrows writes a topic of its own, ``upserts-<run id>``, and leaves the broker
running; the history's ``setup`` says which (``"kafka": "borrowed"`` or ``"own"``). The
reproduce line of such a run starts its own broker: the workload and the schedule are the same.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from sealcheck.harness.run.workload import TOPIC
from sealcheck.infra.local import LocalBackend
from sealcheck.infra.node import Backend

if TYPE_CHECKING:
    from sealcheck.harness.run.test import Test

#: the environment variable that offers a running broker (``127.0.0.1:<port>``) to a run
SHARED_KAFKA = "SEALCHECK_SHARED_KAFKA"
#: the hosts a shared broker may be on: the run's own machine
_LOOPBACK = ("127.0.0.1", "localhost")


def why_own_broker(test: Test, offered: str) -> str:
    """Why a run of ``test`` starts brokers of its own although ``offered`` (a bootstrap) is
    offered; "" when it may borrow that broker."""
    cfg = test.spec
    host = offered.rpartition(":")[0]
    acting = sorted(name for name, n in test.nemeses.items() if "broker" in n.roles)
    reasons = [
        (host not in _LOOPBACK or "," in offered, f"{offered} is not one broker on loopback"),
        (cfg.backend != "local", f"the {cfg.backend} backend runs brokers of its own"),
        (cfg.brokers != 1, f"{cfg.brokers} brokers asked for"),
        (bool(acting), f"{', '.join(acting)} acts on brokers"),
        ("broker-lazy-disk" in test.requires, "its brokers run on lazy disks"),
        (cfg.leave_running, "--leave-running keeps its broker"),
    ]
    return next((why for applies, why in reasons if applies), "")


def borrow_offered(test: Test, backend: Backend, run_id: str, say: Callable[[str], None]) -> str:
    """Borrow the broker offered in :data:`SHARED_KAFKA` for a run of ``test`` on ``backend``
    (not started yet) when it may, saying why not when it may not; the run's topic:
    ``upserts-<run_id>`` on a borrowed broker, else ``upserts``."""
    offered = os.environ.get(SHARED_KAFKA, "")
    if not offered:
        return TOPIC
    why = why_own_broker(test, offered)
    if why or not isinstance(backend, LocalBackend):
        say(f"Kafka: brokers of its own, not {SHARED_KAFKA}'s: {why or 'not a local backend'}")
        return TOPIC
    backend.borrow(offered)
    return f"{TOPIC}-{run_id}"


def borrowed(backend: Backend) -> bool:
    """Whether ``backend`` runs on a borrowed broker."""
    return isinstance(backend, LocalBackend) and backend.borrowed is not None
