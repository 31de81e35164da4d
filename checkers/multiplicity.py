"""Shared by ``diff_of_one`` and ``unique_key``: each collection's sealed updates."""

from __future__ import annotations

from collections.abc import Iterator

import polars as pl

from checkers.inputs import RunData

COLLECTIONS = ("data", "errors", "bindings")


def sealed_updates(run: RunData) -> Iterator[tuple[str, pl.DataFrame, int]]:
    """Per collection: its updates below its upper, and its since."""
    for name in COLLECTIONS:
        upper = run.uppers.get(name, 0)
        yield name, run.collection(name).filter(pl.col("ts") < upper), run.sinces.get(name, 0)
