"""Real network partitions: iptables rules inside one container's network namespace.

A cut from container A to peers P drops, in A's namespace, every packet from P (INPUT) and to
P (OUTPUT), so A and P cannot talk in either direction while everything else still works.
Rules carry the comment ``sealcheck:<run>`` and healing deletes exactly the rules that were
added (``iptables -D`` with the same specification). A namespace dies with its container, and
its rules with it, so a harness that dies cannot leave rules behind on the host.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field


class CutError(RuntimeError):
    """iptables refused a rule; the message has its output."""


def _iptables(pid: int, *args: str) -> None:
    cmd = ["nsenter", "-t", str(pid), "-n", "iptables", "-w", "5", *args]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise CutError(f"{' '.join(cmd)}: {(out.stderr or out.stdout).strip()}")


@dataclass
class Cut:
    """The rules of one cut: in the namespace of ``pid``, drop traffic with ``peers``."""

    pid: int
    peers: tuple[str, ...]
    tag: str
    rules: list[tuple[str, ...]] = field(default_factory=list)

    def apply(self) -> None:
        """Add the rules (recorded one by one, so a failure half-way heals cleanly)."""
        for ip in self.peers:
            for rule in (
                ("INPUT", "-s", ip, "-j", "DROP"),
                ("OUTPUT", "-d", ip, "-j", "DROP"),
            ):
                spec = (*rule, "-m", "comment", "--comment", self.tag)
                _iptables(self.pid, "-I", spec[0], *spec[1:])
                self.rules.append(spec)

    def heal(self) -> int:
        """Delete exactly the rules added; the number deleted (a gone namespace counts 0)."""
        deleted = 0
        while self.rules:
            spec = self.rules.pop()
            try:
                _iptables(self.pid, "-D", spec[0], *spec[1:])
                deleted += 1
            except CutError:
                continue  # the container (and its namespace) is gone: nothing left to undo
        return deleted


def rules_in(pid: int, tag: str) -> list[str]:
    """The rules tagged ``tag`` in the namespace of ``pid`` (for tests and cleanup checks)."""
    cmd = ["nsenter", "-t", str(pid), "-n", "iptables", "-S"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    return [line for line in out.stdout.splitlines() if tag in line]


def can_connect(pid: int, ip: str, port: int, timeout_s: float = 2.0) -> bool:
    """Whether a TCP connection from the namespace of ``pid`` to ``ip:port`` succeeds."""
    code = (
        "import socket,sys\n"
        f"s=socket.socket();s.settimeout({timeout_s})\n"
        f"sys.exit(0 if s.connect_ex(({ip!r},{port}))==0 else 1)"
    )
    out = subprocess.run(
        ["nsenter", "-t", str(pid), "-n", "python3", "-c", code],
        capture_output=True,
        check=False,
        timeout=timeout_s + 5,
    )
    return out.returncode == 0


#: The prefix of a :class:`CommitReplyCut`'s recent-list (xt_recent, per network namespace).
_COMMITTED = "sealcheck_committed"
#: Seconds the database's packets are dropped after the commit that armed the cut: twice a
#: client's time-out (the upsert source's connection may give up after 5 s of unacknowledged
#: data; whether it does varies, see docs/architecture.md), then the link works again — a
#: client that reconnects and retries for a while gets through.
BLACKOUT_S = 10


@dataclass
class CommitReplyCut(Cut):
    """A one-way cut that arms itself at a commit: in the namespace of ``pid``, once a packet to
    the database has carried a ``COMMIT``, every packet *from* the database is dropped for
    :data:`BLACKOUT_S` seconds (once: a later commit does not arm it again). The
    database receives the commit and performs it; its reply never arrives, so the client sees
    a time-out or a broken connection — an indeterminate commit, decided in the kernel at the
    exact packet (``-m string`` and ``-m recent``; the text is plain on the wire: the run's
    PostgreSQL has no TLS). The trigger is the ``COMMIT`` alone: a client's ``INSERT`` and
    ``UPDATE`` become prepared statements after a few runs (psycopg prepares a query from its
    fifth execution), whose text is never sent again, while ``COMMIT`` always goes as text. A
    system under test that commits read-only transactions can be caught at one of those."""

    #: its own recent-list: a fresh cut in a namespace where an earlier one fired must not
    #: find that one's entry (it would count as fired at once and never arm)
    serial: int = 0

    @property
    def list_name(self) -> str:
        """The cut's xt_recent list in its namespace."""
        return f"{_COMMITTED}_{self.serial}"

    def apply(self) -> None:
        """Add the two rules (recorded one by one, so a failure half-way heals cleanly)."""
        for db in self.peers:
            rules = [
                ("OUTPUT", "-d", db, "-p", "tcp", "-m", "string", "--string", "COMMIT",
                 "--algo", "bm", "-m", "recent", "!", "--rcheck", "--name", self.list_name,
                 "--rdest", "-m", "recent", "--set", "--name", self.list_name, "--rdest"),
                ("INPUT", "-s", db, "-m", "recent", "--rcheck", "--seconds",
                 str(BLACKOUT_S), "--name", self.list_name, "--rsource", "-j", "DROP"),
            ]  # fmt: skip
            for rule in rules:
                spec = (*rule, "-m", "comment", "--comment", self.tag)
                _iptables(self.pid, "-A", spec[0], *spec[1:])
                self.rules.append(spec)

    def fired(self) -> bool:
        """Whether a commit has gone out since the cut was applied (replies are dropped)."""
        path = f"/proc/net/xt_recent/{self.list_name}"
        cmd = ["nsenter", "-t", str(self.pid), "-n", "cat", path]
        out = subprocess.run(cmd, capture_output=True, text=True, check=False)
        return out.returncode == 0 and bool(out.stdout.strip())
