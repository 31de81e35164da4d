"""How a value or a text is said inside a one-line message (a refusal, an exit, an anomaly):
cut to a length, and a value named with its type — one way everywhere, so every line the
harness prints reads alike."""

from __future__ import annotations

import reprlib

_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = 60
_REPR.maxlist = _REPR.maxtuple = _REPR.maxdict = 6


def cut(text: str, limit: int) -> str:
    """``text`` as it is when it fits in ``limit`` characters, else cut to ``limit`` with "…"
    as its last."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def short(value: object, limit: int = 80) -> str:
    """``repr(value)``, its long parts abbreviated, at most about ``limit`` characters."""
    return cut(_REPR.repr(value), limit)


def named(value: object) -> str:
    """``42 (int)``: a value, cut to one short line, and its type."""
    return f"{short(value)} ({type(value).__name__})"
