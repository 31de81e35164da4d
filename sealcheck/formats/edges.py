"""The values a job must survive, one kind of field at a time: an ordinary value usually, and
an edge of the kind when asked — the extremes of whole numbers, a decimal's largest, smallest
and finest values at its scale, empty text and text beyond the Basic Multilingual Plane, an
event time late or ahead of its record's place in its writer's stream. Every value comes from
the given random source; event times from the record's number (no clock is read)."""

from __future__ import annotations

import datetime as dt
import decimal
import random
from dataclasses import dataclass

from sealcheck.core.records import Draw

#: event times start here, one second per record of a writer's stream
EPOCH = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
#: how late (or early) an edge event time may be
LATE = dt.timedelta(hours=1)
#: text edges: empty, non-BMP (a surrogate pair in UTF-16), combining marks, right to left,
#: blank
TEXT_EDGES = ("", "\U0001d11e clef \U0001f680", "e\u0301\u0327", "\u05e9\u05dc\u05d5\u05dd", " ")
_WORDS = ("alpha", "bravo", "carrot", "delta", "echo", "fig", "grape", "hotel")


@dataclass
class Drawer:
    """One value's draws: from ``draw.rng``, each field an edge with probability ``edge``."""

    draw: Draw
    edge: float

    @property
    def rng(self) -> random.Random:
        """The draw's random source."""
        return self.draw.rng

    def edgy(self) -> bool:
        """Whether the next field takes an edge of its kind."""
        return self.rng.random() < self.edge


def whole(rng: random.Random, edge: bool, bits: int = 63) -> int:
    """A whole number of ``bits`` + a sign: an edge is 0, -1 or one of the extremes."""
    return rng.choice((0, -(2**bits), 2**bits - 1, -1)) if edge else rng.randrange(-999, 10**6)


def real(rng: random.Random, edge: bool, largest: float = 1.7e308) -> float:
    """A float: an edge is zero, negative zero, a tiny one or the most negative ``largest``
    (never NaN or infinity: no job's output can equal them)."""
    if edge:
        return rng.choice((0.0, -0.0, 1e-30, -largest))
    return round(rng.uniform(-1e6, 1e6), 3)


def text(rng: random.Random, edge: bool) -> str:
    """Text: an edge is one of :data:`TEXT_EDGES`."""
    return rng.choice(TEXT_EDGES) if edge else f"{rng.choice(_WORDS)}-{rng.randrange(10**6)}"


def fixed_point(rng: random.Random, edge: bool, precision: int, scale: int) -> decimal.Decimal:
    """A decimal of ``precision`` digits, ``scale`` of them after the point: an edge is the
    largest, the smallest, zero or the finest step."""
    step = decimal.Decimal(1).scaleb(-scale)
    top = decimal.Decimal(10 ** (precision - scale)) - step
    if edge:
        return rng.choice((top, -top, decimal.Decimal(0).quantize(step), step))
    return decimal.Decimal(rng.randrange(-(10**precision) + 1, 10**precision)) * step


def event_time(rng: random.Random, edge: bool, number: int) -> dt.datetime:
    """The event time of a writer's record ``number`` (UTC, milliseconds): :data:`EPOCH` plus
    one second per record; an edge is up to :data:`LATE` before (out of order with what the
    writer sent before) or after it."""
    at = EPOCH + dt.timedelta(seconds=number)
    if edge:
        at += rng.choice((-1, 1)) * dt.timedelta(
            seconds=rng.randrange(1, int(LATE.total_seconds()))
        )
    return at + dt.timedelta(milliseconds=rng.randrange(1000))
