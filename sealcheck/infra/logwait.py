"""Wait until a node logs a line: how a service of the system under test (a Spark Connect
server, a Spark master or worker) says that it serves."""

from __future__ import annotations

import time
from typing import Protocol


class Logging(Protocol):
    """What waiting needs of a node (any :class:`sealcheck.core.nodes.Node` has it)."""

    @property
    def name(self) -> str:
        """Its name, in errors."""

    @property
    def alive(self) -> bool:
        """Whether it runs."""

    def log_text(self) -> str:
        """What it logged so far."""


def log_tail(node: Logging, lines: int = 15) -> str:
    """The last ``lines`` lines ``node`` logged."""
    return "\n".join(node.log_text().splitlines()[-lines:])


def wait_log(
    node: Logging,
    text: str,
    timeout_s: float,
    since: int = 0,
    what: str | None = None,
    poll_s: float = 0.2,
) -> None:
    """Wait until ``node`` logs ``text`` past offset ``since`` of its log (a log appended to
    across starts: its length before this start). A RuntimeError with its last lines if it
    exits first, a TimeoutError after ``timeout_s``; ``what`` names it there (default: its
    name)."""
    who = what or node.name
    deadline = time.monotonic() + timeout_s
    while text not in node.log_text()[since:]:
        if not node.alive:
            raise RuntimeError(f"{who} exited before it logged '{text}':\n{log_tail(node)}")
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"{who} did not log '{text}' in {timeout_s:.0f}s:\n" + log_tail(node)
            )
        time.sleep(poll_s)
