"""The run directory of ``bench/scale.py``, laid out as the harness lays out a run
(``harness/session.py``), at a size where the harness's own helpers would hold every record as
a Python object: the acknowledged writes into ``acks.arrows`` in one go (the harness's
writer appends them as they arrive: ``sealcheck/rundir/acks.py``), then the observer's, the
final phase's and the final ``inputs`` ops in the history's format (``rundir/history.py``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl

from sealcheck.rundir.acks import AckWriter
from sealcheck.rundir.captures import CAPTURED_OP
from sealcheck.rundir.files import ACKS, describe


def write_history(
    run_dir: Path,
    frame: pl.DataFrame,
    observed: list[tuple[int, dict[str, int]]],
    ends: dict[int, int],
    catch_up_s: float,
    t0_ns: int,
    captured: list[tuple[int, dict[str, Any]]] | None = None,
) -> None:
    """``acks.arrows``: a row per acknowledged record of ``frame`` (``offset`` >= 0, in the
    order of ``acked_ns``), as the harness's writer leaves it
    (:mod:`sealcheck.rundir.acks`); ``history.jsonl``: the observer's ``uppers``
    (``observed``: monotonic ns and uppers) and its ``captured`` ops (``captured``: monotonic
    ns and the op's value), in the order they happened, ``log-end``, ``caught-up`` and, after
    the topic dump and export already in ``run_dir``, the ``inputs`` manifest. Times are ns
    since ``t0_ns``."""
    acks = frame.filter(pl.col("offset") >= 0).sort("acked_ns")
    writer = AckWriter(run_dir / ACKS)
    writer.extend(
        acks.select(
            pl.col("acked_ns").alias("time"), "partition", "offset", "key", "value"
        ).to_arrow()
    )
    writer.close()
    last = int(acks.select(pl.col("acked_ns").max()).item() or 0)
    ops: list[dict[str, Any]] = []
    seen = [(ns, "uppers", v) for ns, v in observed]
    seen += [(ns, CAPTURED_OP, v) for ns, v in captured or []]
    for mono_ns, f, value in sorted(seen, key=lambda e: e[0]):
        last = max(last, mono_ns - t0_ns)
        ops.append({"process": "observer", "f": f, "value": value, "time": last})
    ops.append(
        {"process": "harness", "f": "log-end", "value": {str(p): o for p, o in ends.items()}}
    )
    ops.append({"process": "harness", "f": "caught-up", "value": {"took_s": catch_up_s}})
    files = describe(run_dir)  # topic.parquet, acks.arrows and export/, already there
    ops.append(
        {
            "process": "harness",
            "f": "inputs",
            "value": {"files": files, "writes": {"ok": acks.height}},
        }
    )
    with open(run_dir / "history.jsonl", "wb") as fh:
        for i, op in enumerate(ops):
            last = max(last, int(op.pop("time", last)))
            head = {"index": i, "time": last, "process": op.pop("process")}
            line = {**head, "type": "info", **op}
            fh.write(json.dumps(line, separators=(",", ":")).encode() + b"\n")
