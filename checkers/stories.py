"""The failing keys' story, for ``results.json`` (:class:`sealcheck.rundir.facts.KeyStory`):
for the first keys an anomaly names, every input record of that key (partition, offset, value
or tombstone, when it was acknowledged, the step that bound it) and every persisted update of
it (collection, value, step, diff, sealed or not; for a job whose versions write different
columns, those columns' updates beside ``data``'s), in order — what an on-call engineer reads
first to see where a record was lost, doubled or invented.

Each story highlights the key's first bad update: the first persisted ``data`` update that
disagrees with the model (steps merged by compaction compared merged, as ``sealed_state`` does),
with the records bound at that step; when that cannot be told (the key's difference is not in
its ``data`` updates), the first update at or after the step of the key's first anomaly.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable

import polars as pl

from sealcheck.checkers.frames import consolidate, h
from sealcheck.checkers.inputs import RunData
from sealcheck.checkers.replay import assign_steps, model_updates
from sealcheck.checkers.result import Anomaly
from sealcheck.core.said import cut
from sealcheck.rundir.facts import MAX_KEYS, MAX_ROWS, KeyStory, StoryRecord, StoryUpdate

#: characters of a value kept in a story
MAX_TEXT = 90
#: the story's name for updates of the columns not every version writes (``data``'s, split
#: off into ``export/versioned.parquet``)
VERSIONED_COLLECTION = "data (versioned columns)"


def _text(raw: bytes | None) -> str | None:
    if raw is None:
        return None
    return cut(raw.decode("utf-8", errors="replace"), MAX_TEXT)


def failing_keys(
    anomalies: Iterable[Anomaly], step: str = "step"
) -> list[tuple[str, str, int | None]]:
    """The first :data:`~sealcheck.rundir.facts.MAX_KEYS` distinct keys the anomalies (in the
    order the report lists them) name, each with the first reason and its step (``step``: what
    a step is called — ``state`` for an output without bindings)."""
    out: dict[str, tuple[str, str, int | None]] = {}
    for a in anomalies:
        if isinstance(a.key, str) and a.key not in out and a.collection != "bindings":
            at = a.step if isinstance(a.step, int) and not isinstance(a.step, bool) else None
            out[a.key] = (a.key, f"{a.kind} at {step} {a.step}", at)
        if len(out) == MAX_KEYS:
            break
    return list(out.values())


def first_disagreement(run: RunData, raw: bytes, updates: pl.DataFrame) -> tuple[int, set[int]]:
    """The first step at which the key's sealed ``data`` updates (``updates``: the key's rows
    with ``collection, value, ts, diff``) differ from the model's, and the positions in
    ``updates`` of the persisted updates there that disagree (empty when the store lacks what
    the model has). Steps up to ``since`` are compared merged into it. Raises ``LookupError``
    when they agree at every step."""
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
    at or after the anomaly's step (always so for an output without bindings: no record is
    bound to a state, so there is no model of a state to disagree with)."""
    wrong: set[int] = set()
    if run.keeps_bindings:
        with contextlib.suppress(LookupError):
            story.bad_step, wrong = first_disagreement(run, raw, updates)
    at = story.bad_step if story.bad_step is not None else story.step
    if at is not None and not wrong:  # the store lacks an update, or no disagreement: the next
        later = [i for i, u in enumerate(story.updates) if u.step >= at]
        wrong = set(later[:1])
    for i, u in enumerate(story.updates):
        u.hit = i in wrong
    for r in story.records:
        r.hit = at is not None and r.step == at


def key_story(run: RunData, ranges: pl.DataFrame, key: str, why: str, step: int | None) -> KeyStory:
    """The story of one key (``ranges``: :func:`sealcheck.checkers.replay.binding_ranges` of the
    sealed bindings, read once for all keys)."""
    raw = key.encode("utf-8")
    records = run.record_keys(raw)
    steps = assign_steps(records, ranges) if records.height else pl.Series("step", [], pl.Int64)
    places = records.select("partition", "offset")
    acked = run.history.collect(
        run.history.acked.lazy()
        .select("time", pl.col("partition").cast(pl.Int64), pl.col("offset").cast(pl.Int64))
        .join(places.lazy(), on=["partition", "offset"])
    )
    acks = {
        (int(r["partition"]), int(r["offset"])): r["time"] / 1e9
        for r in acked.iter_rows(named=True)
    }
    story = KeyStory(key, why, step)
    for r, bound in zip(records.iter_rows(named=True), steps.to_list(), strict=True):
        pos = (int(r["partition"]), int(r["offset"]))
        story.records.append(StoryRecord(*pos, _text(r["value"]), acks.get(pos), bound))
    updates = (
        run.updates.lazy()
        .filter(pl.col("key") == raw, pl.col("collection") != "bindings")
        .sort("ts", "diff")
        .collect()
    )
    for u in updates.iter_rows(named=True):
        upper, since = run.uppers.get(u["collection"], 0), run.sinces.get(u["collection"], 0)
        step = max(int(u["ts"]), since)  # merged by compaction: shown as step ``since``
        story.updates.append(
            StoryUpdate(u["collection"], _text(u["value"]), step, int(u["diff"]), upper)
        )
    _highlight(story, run, raw, updates)
    if run.versioned is not None:  # a release's own columns, split off the export (issue 53)
        upper, since = run.uppers.get("data", 0), run.sinces.get("data", 0)
        extra = run.versioned.lazy().filter(pl.col("key") == raw).sort("ts", "diff").collect()
        story.updates += [
            StoryUpdate(
                VERSIONED_COLLECTION,
                _text(u["value"]),
                max(int(u["ts"]), since),
                int(u["diff"]),
                upper,
            )
            for u in extra.iter_rows(named=True)
        ]
        story.updates.sort(key=lambda u: (u.step, u.diff))  # stable: data's before at a tie
    story.more_records = max(0, len(story.records) - MAX_ROWS)
    story.more_updates = max(0, len(story.updates) - MAX_ROWS)
    story.records, story.updates = story.records[:MAX_ROWS], story.updates[:MAX_ROWS]
    return story


def stories(
    run: RunData, ranges: pl.DataFrame, anomalies: Iterable[Anomaly]
) -> tuple[list[KeyStory], str]:
    """The stories of the failing keys, and why there are none when there are none."""
    keys = failing_keys(anomalies, "step" if run.keeps_bindings else "state")
    if not keys:
        return [], "no anomaly names a key"
    return [key_story(run, ranges, *k) for k in keys], ""
