"""The failing keys' story: for the first keys an anomaly names, every input record of that
key (partition, offset, value or tombstone, when it was acknowledged, the step that bound it)
and every persisted update of it (collection, value, step, diff, sealed or not), in order —
what an on-call engineer reads first to see where a record was lost, doubled or invented.

Each story highlights the key's first bad update: the first persisted ``data`` update that
disagrees with the model (steps merged by compaction compared merged, as ``sealed_state`` does),
with the records bound at that step; when that cannot be told (the key's difference is not in
its ``data`` updates), the first update at or after the step of the key's first anomaly.

It reads the same files as the checkers (through :func:`sealcheck.checkers.load_run`) and never the
system under test. Any failure to read gives a one-line reason instead of a story.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import polars as pl

if TYPE_CHECKING:
    from sealcheck.checkers import RunData

#: keys told, and rows shown per key and side (the rest are counted)
MAX_KEYS, MAX_ROWS = 3, 40


@dataclass
class KeyStory:
    """One key: its records in Kafka and its updates in the store."""

    key: str
    why: str
    #: the step of the first anomaly on this key
    step: int | None = None
    #: the first step at which the key's persisted updates disagree with the model (None: no
    #: disagreement found in its ``data`` updates; the anomaly's step is used instead)
    bad_step: int | None = None
    records: list[dict[str, Any]] = field(default_factory=list)
    updates: list[dict[str, Any]] = field(default_factory=list)
    more_records: int = 0
    more_updates: int = 0


def _text(raw: bytes | None, limit: int = 90) -> str:
    if raw is None:
        return "(tombstone)"
    text = raw.decode("utf-8", errors="replace")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def failing_keys(anomalies: list[dict[str, Any]]) -> list[tuple[str, str, int | None]]:
    """The first :data:`MAX_KEYS` distinct keys anomalies name, each with the first reason
    and its step."""
    out: dict[str, tuple[str, str, int | None]] = {}
    for a in anomalies:
        key, step = a.get("key"), a.get("step")
        if isinstance(key, str) and key not in out and a.get("collection") != "bindings":
            at = step if isinstance(step, int) else None
            out[key] = (key, f"{a.get('kind')} at step {step}", at)
        if len(out) == MAX_KEYS:
            break
    return list(out.values())


def stories(
    loaded: tuple[RunData, pl.DataFrame] | str, anomalies: list[dict[str, Any]]
) -> tuple[list[KeyStory], str]:
    """The stories of the failing keys from the run the report already loaded (the run and
    its binding ranges, or why it could not be read), and why there are none when there are
    none."""
    keys = failing_keys(anomalies)
    if not keys:
        return [], "no anomaly names a key"
    if isinstance(loaded, str):
        return [], f"the stored run could not be read for the story: {loaded}"
    try:
        run, ranges = loaded
        return [_story(run, ranges, *k) for k in keys], ""
    except Exception as exc:  # a report must render whatever the files hold
        return [], f"the stored run could not be read for the story: {type(exc).__name__}: {exc}"


def first_disagreement(run: RunData, raw: bytes, updates: pl.DataFrame) -> tuple[int, set[int]]:
    """The first step at which the key's sealed ``data`` updates (``updates``: the key's rows
    with ``collection, value, ts, diff``) differ from the model's, and the positions in
    ``updates`` of the persisted updates there that disagree (empty when the store lacks what
    the model has). Steps up to ``since`` are compared merged into it. Raises ``LookupError``
    when they agree at every step."""
    from sealcheck.checkers.frames import consolidate, h
    from sealcheck.checkers.replay import model_updates

    since, upper = run.sinces.get("data", 0), run.uppers.get("data", 0)
    kh = pl.select(h(pl.lit(raw, pl.Binary))).item()
    changes = run.model_changes("data").filter(pl.col("ukh") == kh)
    model = consolidate(model_updates(changes).filter(pl.col("ts") < upper), since)
    data = (
        updates.with_row_index("i")
        .filter((pl.col("collection") == "data") & (pl.col("ts") < upper))
        .with_columns(
            pl.lit(kh, pl.UInt64).alias("kh"),
            h("value").alias("vh"),
            pl.max_horizontal(pl.col("ts"), pl.lit(since)).alias("at"),
        )
    )
    held = consolidate(data.select("kh", "vh", "ts", "diff"), since)
    both = model.join(held, on=["kh", "vh", "ts"], how="full", coalesce=True, suffix="_held")
    differ = both.with_columns(pl.col("diff").fill_null(0), pl.col("diff_held").fill_null(0))
    differ = differ.filter(pl.col("diff") != pl.col("diff_held"))
    if differ.height == 0:
        raise LookupError("the key's data updates agree with the model at every step")
    first = int(differ["ts"].min())  # type: ignore[arg-type]
    wrong = differ.filter((pl.col("ts") == first) & (pl.col("diff_held") != 0))["vh"]
    rows = data.filter((pl.col("at") == first) & pl.col("vh").is_in(wrong.implode()))["i"]
    return first, {int(i) for i in rows}


def _highlight(story: KeyStory, run: RunData, raw: bytes, updates: pl.DataFrame) -> None:
    """Mark the first bad update (and the records bound at its step), else the first update
    at or after the anomaly's step."""
    try:
        story.bad_step, wrong = first_disagreement(run, raw, updates)
    except LookupError:
        wrong = set()
    if story.bad_step is not None and not wrong:  # the store lacks an update: the next one
        later = [i for i, u in enumerate(story.updates) if u["step"] >= story.bad_step]
        wrong = set(later[:1])
    at = story.bad_step if story.bad_step is not None else story.step
    if story.bad_step is None and at is not None:
        later = [i for i, u in enumerate(story.updates) if u["step"] >= at]
        wrong = set(later[:1])
    for i, u in enumerate(story.updates):
        u["hit"] = i in wrong
    for r in story.records:
        r["hit"] = at is not None and r["step"] == at


def _story(run: RunData, ranges: pl.DataFrame, key: str, why: str, step: int | None) -> KeyStory:
    from sealcheck.checkers.replay import assign_steps

    raw = key.encode("utf-8")
    records = run.topic.lazy().filter(pl.col("key") == raw).sort("offset", "partition").collect()
    steps = assign_steps(records, ranges) if records.height else pl.Series("step", [], pl.Int64)
    acked = run.history.collect(
        run.history.acked.lazy().filter(pl.col("key") == raw).select("time", "partition", "offset")
    )
    acks = {
        (int(r["partition"]), int(r["offset"])): r["time"] / 1e9
        for r in acked.iter_rows(named=True)
    }
    story = KeyStory(key, why, step)
    for r, step in zip(records.iter_rows(named=True), steps.to_list(), strict=True):
        pos = (int(r["partition"]), int(r["offset"]))
        story.records.append(
            {
                "partition": pos[0],
                "offset": pos[1],
                "value": _text(r["value"]),
                "acked": f"{acks[pos]:.2f} s" if pos in acks else "not acknowledged",
                "step": "not bound" if step is None else step,
            }
        )
    updates = (
        run.updates.lazy()
        .filter(pl.col("key") == raw, pl.col("collection") != "bindings")
        .sort("ts", "diff")
        .collect()
    )
    for u in updates.iter_rows(named=True):
        upper = run.uppers.get(u["collection"], 0)
        story.updates.append(
            {
                "collection": u["collection"],
                "value": _text(u["value"]),
                "step": u["ts"],
                "diff": u["diff"],
                "sealed": "sealed" if u["ts"] < upper else f"not sealed (upper {upper})",
            }
        )
    _highlight(story, run, raw, updates)
    story.more_records = max(0, len(story.records) - MAX_ROWS)
    story.more_updates = max(0, len(story.updates) - MAX_ROWS)
    story.records, story.updates = story.records[:MAX_ROWS], story.updates[:MAX_ROWS]
    return story
