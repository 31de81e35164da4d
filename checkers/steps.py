"""Every sealed step, one by one: the export's updates with the steps compaction merged filled
in from the harness's captures (:mod:`sealcheck.rundir.captures`).

A store that compacts to ``since`` keeps the steps below ``since`` only merged (at times
below ``since``, each read as ``since``), so from the export alone steps up to ``since`` are
judged as one merged step, and a wrong step that healed before compaction is invisible. The
observer captured each step right after it was sealed, so:

* where the export holds a step apart (above ``since``, or every step of a collection never
  compacted) the export is used, and a captured copy of that step must fingerprint the same;
* the merged prefix ``[0, since]`` is replaced by its captured steps when *every* one of them
  was captured, and the export's merged step must fingerprint like their sum (the
  fingerprint is linear in ``diff``); otherwise the prefix stays merged and those steps are
  *not judged one by one*: the effective ``since`` stays, and ``sealed_state`` is UNKNOWN
  naming them;
* a captured step whose content differs from the export's is a sealed step that changed after
  it was sealed (:attr:`Steps.changed`).

Steps *sealed* are counted from the uppers the harness observed (and the export's), never from
the captures.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import polars as pl
import pyarrow as pa

from sealcheck.checkers.frames import fingerprints, h, pair_hash, signed
from sealcheck.rundir import captures
from sealcheck.rundir.captures import CAPTURED_OP
from sealcheck.rundir.files import Export, InputFileError, why_unreadable
from sealcheck.rundir.regular import RESTORE


@dataclass
class Steps:
    """Which steps of each collection are judged one by one, and what captures showed."""

    #: steps sealed per collection: the highest upper observed or exported
    sealed: dict[str, int] = field(default_factory=dict)
    #: ``(collection, step)`` whose captured content differs from the export's
    changed: list[tuple[str, int]] = field(default_factory=list)
    #: steps captured per collection
    captured: dict[str, int] = field(default_factory=dict)
    #: per collection, the step ranges compaction merged before the harness could capture them
    missed: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    #: the ``since`` of each collection in the export (before captures filled it in)
    export_sinces: dict[str, int] = field(default_factory=dict)


def _covered(ranges: list[tuple[int, int]]) -> set[int]:
    return {t for lo, hi in ranges for t in range(lo, hi)}


def _fp(frame: pl.LazyFrame) -> pl.DataFrame:
    hashed = frame.select(h("key").alias("kh"), h("value").alias("vh"), "ts", "diff").collect()
    return fingerprints(hashed, signed(pair_hash("kh", "vh")))


def merge(
    export: pl.LazyFrame,
    uppers: dict[str, int],
    sinces: dict[str, int],
    observed: dict[str, int],
    captured_rows: pl.DataFrame | None,
    ranges: dict[str, list[tuple[int, int]]],
) -> tuple[pl.LazyFrame, dict[str, int], Steps]:
    """The updates to judge (``collection, key, value, ts, diff``), the effective ``since`` of
    each collection (0 where every merged step was captured) and the :class:`Steps`."""
    steps = Steps(export_sinces=dict(sinces))
    parts: list[pl.LazyFrame] = []
    effective: dict[str, int] = {}
    names = sorted(set(uppers) | set(sinces) | set(ranges))
    caught = captured_rows.lazy() if captured_rows is not None else None
    for c in names:
        upper, since = uppers.get(c, 0), sinces.get(c, 0)
        steps.sealed[c] = max(upper, observed.get(c, 0))
        have = _covered(ranges.get(c, [])) & set(range(upper))
        steps.captured[c] = len(have)
        mine = export.filter(pl.col("collection") == c)
        filled = since > 0 and caught is not None and set(range(since + 1)) <= have
        effective[c] = 0 if filled or since == 0 else since
        if filled and caught is not None:
            parts.append(mine.filter(pl.col("ts") > since))
            parts.append(caught.filter((pl.col("collection") == c) & (pl.col("ts") <= since)))
        else:
            parts.append(mine)
        if caught is not None and have:
            steps.changed += [(c, t) for t in _changed(mine, caught, c, since, have)]
    if captured_rows is not None:  # a collection the export lacks but captures hold
        for c in sorted(set(captured_rows["collection"].unique().to_list()) - set(names)):
            steps.changed.append((c, -1))
    return pl.concat(parts, how="vertical") if parts else export, effective, steps


def _changed(
    export: pl.LazyFrame, caught: pl.LazyFrame, c: str, since: int, have: set[int]
) -> list[int]:
    """Captured steps of ``c`` whose content the export does not hold the same."""
    prefix = since > 0 and set(range(since + 1)) <= have
    checked = sorted(t for t in have if t > since or since == 0)
    wanted = pl.Series(checked, dtype=pl.Int64).implode()
    at = pl.max_horizontal(pl.col("ts"), pl.lit(since)).alias("ts") if since else pl.col("ts")
    mine = caught.filter(pl.col("collection") == c).with_columns(at)
    theirs = export.with_columns(at)
    keep = pl.col("ts").is_in(wanted)
    if prefix:
        keep = keep | (pl.col("ts") == since)
    a, b = _fp(mine.filter(keep)), _fp(theirs.filter(keep))
    both = a.join(b, on="ts", how="full", coalesce=True, suffix="_export")
    return sorted(both.filter(pl.col("fp").ne_missing(pl.col("fp_export")))["ts"].to_list())


def captured_ranges(
    ops: list[dict[str, object]], which: str = "ranges"
) -> dict[str, list[tuple[int, int]]]:
    """Per collection, the step ranges the history's ``captured`` ops say were captured
    (``which="missed"``: merged by compaction before they could be)."""
    out: dict[str, list[tuple[int, int]]] = {}
    for op in ops:
        value = op.get("value")
        if op.get("f") != CAPTURED_OP or not isinstance(value, dict):
            continue
        for c, r in (value.get(which) or {}).items():
            out.setdefault(str(c), []).append((int(r[0]), int(r[1])))
    return out


def observed_uppers(ops: list[dict[str, object]]) -> dict[str, int]:
    """The highest upper of each collection the observer saw."""
    out: dict[str, int] = {}
    for op in ops:
        value = op.get("value")
        if op.get("f") == "uppers" and isinstance(value, dict):
            for c, u in value.items():
                if isinstance(u, int):
                    out[c] = max(out.get(c, 0), u)
    return out


def load(
    run_dir: Path,
    captured: bytes | None,
    ops: list[dict[str, object]],
    export: pl.LazyFrame,
    uppers: dict[str, int],
    sinces: dict[str, int],
) -> tuple[pl.LazyFrame, dict[str, int], Steps]:
    """:func:`merge` with the run's captures: ``captured`` is the bytes of ``captures.arrows``
    the caller read and proves (:func:`sealcheck.rundir.files.hold`), None when the manifest
    does not list it. Captures that are not a whole stream, or an unreadable export, are a
    :class:`sealcheck.rundir.files.InputFileError` naming the file."""
    rows: pl.DataFrame | None = None
    listed = captured is not None
    if captured is not None:
        try:
            read = pl.from_arrow(captures.read(captured))
        except (OSError, pa.ArrowException) as exc:
            raise InputFileError(
                f"{run_dir / captures.CAPTURES}: not a whole Arrow IPC stream "
                f"({why_unreadable(exc)}): {RESTORE}"
            ) from None
        rows = read if isinstance(read, pl.DataFrame) else read.to_frame()
    ranges = captured_ranges(ops) if listed else {}
    try:
        judged, effective, steps = merge(export, uppers, sinces, observed_uppers(ops), rows, ranges)
        steps.missed = captured_ranges(ops, "missed") if listed else {}
        return judged, effective, steps
    except pl.exceptions.PolarsError as exc:
        updates = run_dir / Export.of(run_dir).updates
        raise InputFileError(
            f"{updates}: cannot be read ({why_unreadable(exc)}): restore it from the run, or "
            "re-run the test"
        ) from None
