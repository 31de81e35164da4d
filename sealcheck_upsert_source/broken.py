"""Deliberately wrong variants of the step loop (``--broken MODE``), for the harness's
self-test: each is a bug a real pipeline could have, reachable only through one kind of fault
or window, so the detection matrix (``sealcheck selftest``) shows which faults and which
checkers find which bugs. The correct loop is :class:`sealcheck_upsert_source.loop.StepLoop`; every
variant
overrides one hook of it and nothing else.
"""

from __future__ import annotations

from collections.abc import Callable

from sealcheck_upsert_source import upsert
from sealcheck_upsert_source.failpoints import FailpointError, failpoint
from sealcheck_upsert_source.loop import (
    BINDINGS,
    DATA,
    ERRORS,
    Fenced,
    LoopConfig,
    StepLoop,
    decode_bindings,
)
from sealcheck_upsert_source.persist.api import (
    Batch,
    Persist,
    PersistError,
    StoreUnavailable,
    Update,
    UpperMismatch,
)
from sealcheck_upsert_source.source import Source

#: Every variant: name -> the bug (what it does wrong, and what reaches it).
BROKEN_MODES: dict[str, str] = {
    "reappend-after-restart": "after a restart, append the last step's inserts again with the "
    "first new step (as if the in-memory state were lost but the output replayed); any restart",
    "stale-rehydrate": "rehydrate the data state as of t-2 instead of t-1 (an off-by-one in "
    "the snapshot time); any restart",
    "rewind-bindings": "after a restart, bind the next step from the offsets of t-2 (offsets "
    "go back); any restart",
    "replay-drops-tombstones": "when replaying bindings sealed before a crash, ignore "
    "tombstones; a crash between the bindings and the data append",
    "replay-skips-range": "when replaying bindings sealed before a crash, seal the step with "
    "nothing read; a crash between the bindings and the data append",
    "data-before-bindings": "append data before the bindings of its step (the design's order "
    "reversed); a crash between the two appends",
    "split-data-errors": "append data and errors in two transactions (data.after_commit "
    "between them); a crash between the two",
    "errors-apart": "append data, then errors in a transaction of their own, with no "
    "failpoint between them (the same mistake as split-data-errors, made where nobody placed "
    "one); a crash between the two commits, found from outside (the boundary nemesis)",
    "truncate-values-after-restart": "after a restart, store values cut to 12 bytes (a codec "
    "set up wrongly on rehydrate); any restart",
    "ignore-fencing": "when another writer moved an upper, write anyway at the new upper "
    "instead of stopping; only two writers at once (the zombie nemesis)",
    "retry-unknown-commits": "when a commit reports failure (or its reply is lost: reconnect), "
    "append the batch again at the upper the store shows now (a blind retry of an operation "
    "that may have happened); only indeterminate storage operations",
    "non-durable-commits": "open the store with commits that return before they are on disk "
    "(SQLite synchronous=OFF); only lost un-fsynced writes (the lost-writes nemesis), since a "
    "killed process never loses what the page cache holds",
}

#: Variants that are a way of opening the store, not a change of the loop.
STORE_MODES = frozenset({"non-durable-commits"})


def durable_commits(mode: str | None) -> bool:
    """Whether variant ``mode`` (None: the correct pipeline) opens its store with commits that
    are on disk when they return."""
    return mode != "non-durable-commits"


class _Broken(StepLoop):
    """The loop with ``config.broken`` applied through its hooks."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.mode = self.config.broken
        self.restarted = False
        self._reappend: list[Update] = []
        self._rewound: dict[int, int] | None = None
        self._last_bindings: tuple[dict[int, int], dict[int, int]] = ({}, {})
        self._late_bindings: tuple[dict[int, int], dict[int, int]] | None = None

    def _read_state(self, t: int) -> None:
        super()._read_state(t)
        self.restarted = True
        if self.mode == "reappend-after-restart":
            self._reappend = [u for u in self.store.updates(DATA, t - 1, t) if u.diff > 0]
        elif self.mode == "stale-rehydrate" and t >= 2:
            self.data = self.store.snapshot(DATA, t - 2)
        elif self.mode == "rewind-bindings" and t >= 2:
            self._rewound = decode_bindings(self.store.snapshot(BINDINGS, t - 2))

    def _bindings_for_step(self) -> dict[int, int] | None:
        rewound = self._rewound
        if rewound is not None and self.store.uppers().get(BINDINGS, 0) <= self.t:
            self.bound, self._rewound = rewound, None
        if self.mode != "retry-unknown-commits":
            return super()._bindings_for_step()
        try:
            return super()._bindings_for_step()
        except (FailpointError, PersistError) as exc:
            self._reconnect_after(exc)
            old, nxt = self._last_bindings
            upper = self.store.uppers().get(BINDINGS, 0)  # blind retry at the upper seen now
            self.store.compare_and_append(BINDINGS, _diff((old, nxt), upper), upper, upper + 1)
            return nxt

    def _append_bindings(self, nxt: dict[int, int], t: int) -> None:
        self._last_bindings = (dict(self.bound), nxt)
        if self.mode == "data-before-bindings":
            self._late_bindings = (dict(self.bound), nxt)  # appended after the data
            return
        try:
            super()._append_bindings(nxt, t)
        except Fenced:
            if self.mode != "ignore-fencing":
                raise

    def _read(self, lo: dict[int, int], hi: dict[int, int]) -> list[upsert.SourceRecord]:
        if self.replaying and self.mode == "replay-skips-range":
            return []
        records = super()._read(lo, hi)
        if self.replaying and self.mode == "replay-drops-tombstones":
            return [r for r in records if r.value is not None]
        if self.restarted and self.mode == "truncate-values-after-restart":
            return [
                upsert.SourceRecord(r.partition, r.offset, r.key, _cut(r.value)) for r in records
            ]
        return records

    def _append_output(self, out: upsert.StepOutput, t: int) -> upsert.StepOutput:
        if self._reappend:
            out.data.extend(Update(u.key, u.value, t, u.diff) for u in self._reappend)
            self._reappend = []
        if self.mode == "split-data-errors":
            failpoint("data.before_append")
            self._cas(DATA, out.data, t)
            failpoint("data.after_commit")
            self._cas(ERRORS, out.errors, t)
            return out
        if self.mode == "errors-apart":
            failpoint("data.before_append")
            self._cas(DATA, out.data, t)
            self._cas(ERRORS, out.errors, t)
            return out
        if self.mode not in ("ignore-fencing", "retry-unknown-commits"):
            out = super()._append_output(out, t)
        else:
            try:
                out = super()._append_output(out, t)
            except (Fenced, FailpointError, PersistError) as exc:
                self._reconnect_after(exc)
                upper = self.store.uppers().get(DATA, 0)  # rebase onto whatever is there now
                self._cas_many(out, upper)
        late = self._late_bindings
        if late is not None:
            self._late_bindings = None
            failpoint("bindings.before_append")
            self.store.compare_and_append(BINDINGS, _diff(late, t), t, t + 1)
        return out

    def _reconnect_after(self, exc: BaseException) -> None:
        """A write whose reply was lost on the wire left a broken connection: open another
        (as a retrying client would) before retrying blindly."""
        reconnect = getattr(self.store, "reconnect", None)
        if isinstance(exc, StoreUnavailable) and reconnect is not None:
            reconnect()

    def _cas(self, collection: str, updates: list[Update], t: int) -> None:
        try:
            self.store.compare_and_append(collection, updates, t, t + 1)
        except UpperMismatch as exc:
            raise Fenced(str(exc)) from exc

    def _cas_many(self, out: upsert.StepOutput, upper: int) -> None:
        def at(us: list[Update]) -> list[Update]:
            return [Update(u.key, u.value, upper, u.diff) for u in us]

        self.store.compare_and_append_many(
            {
                DATA: Batch(at(out.data), upper, upper + 1),
                ERRORS: Batch(at(out.errors), upper, upper + 1),
            }
        )


def _cut(value: bytes | None) -> bytes | None:
    return None if value is None else value[:12]


def _diff(late: tuple[dict[int, int], dict[int, int]], t: int) -> list[Update]:
    from sealcheck_upsert_source.loop import diff_bindings

    return diff_bindings(late[0], late[1], t)


def make_loop(
    store: Persist,
    source: Source,
    config: LoopConfig,
    log: Callable[[dict[str, object]], None],
) -> StepLoop:
    """The correct loop, or the variant ``config.broken`` names (an unknown name is a
    ValueError listing the known ones)."""
    if config.broken is None or config.broken in STORE_MODES:
        return StepLoop(store, source, config, log)
    if config.broken not in BROKEN_MODES:
        raise ValueError(f"broken={config.broken!r} is unknown; known: {', '.join(BROKEN_MODES)}")
    return _Broken(store, source, config, log)
