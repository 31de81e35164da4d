"""Shared by ``diff_of_one`` and ``unique_key``: the collections they judge, and each one's
sealed updates."""

from __future__ import annotations

from collections.abc import Iterator

import polars as pl

from sealcheck.checkers.inputs import RunData

COLLECTIONS = ("data", "errors", "bindings")


def sealed_change_points(run: RunData) -> Iterator[tuple[str, pl.DataFrame]]:
    """Per collection: the change points of its sealed updates."""
    for name in COLLECTIONS:
        yield name, run.change_points(name)
