"""What every ``sealcheck`` command shares: its exit codes (one table) and argument types.

It lives with the campaigns, the lowest layer that has commands (``shrink``, ``selftest``,
``suite``), so that they and the CLI above them (``sealcheck.harness.cli``) import one table.
"""

from __future__ import annotations

import argparse

EXIT_VALID = 0
EXIT_INVALID = 1
EXIT_UNKNOWN = 2
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143
EXIT_BAD_ARGS = 254
EXIT_CRASH = 255

#: Every exit code of the ``sealcheck`` command and what it means (help texts are written
#: from it).
EXIT_CODES: dict[int, str] = {
    EXIT_VALID: "valid",
    EXIT_INVALID: "invalid",
    EXIT_UNKNOWN: "unknown",
    EXIT_INTERRUPTED: "interrupted (Ctrl-C)",
    EXIT_TERMINATED: "terminated (SIGTERM), after the same teardown as Ctrl-C",
    EXIT_BAD_ARGS: "bad arguments",
    EXIT_CRASH: "the harness itself crashed",
}

#: The exit code of a verdict: valid (True), invalid (False), unknown (None).
VERDICT_EXIT: dict[bool | None, int] = {
    True: EXIT_VALID,
    False: EXIT_INVALID,
    None: EXIT_UNKNOWN,
}


def exit_help(*codes: int) -> str:
    """``0 valid, 1 invalid, …`` for ``codes`` (every code when none is given)."""
    return ", ".join(f"{c} {EXIT_CODES[c]}" for c in codes or EXIT_CODES)


def positive(text: str) -> int:
    """An argparse type: a whole number of at least 1 (anything else is one clear line)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be at least 1")
    return value
