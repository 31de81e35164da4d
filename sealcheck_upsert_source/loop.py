"""The step loop: bind offsets, read, upsert, append, seal — and restart at the sealed step.

Step ``t`` (timestamps are steps ``0, 1, 2, …``):

1. If ``bindings`` is sealed past ``t`` (a crash after binding), replay exactly the bound
   range. Otherwise choose a new range — the log end capped by ``max_records_per_step`` —
   and compare-and-append the bindings for ``t`` **first**.
2. Read exactly that range, keep each raw key's winning record, diff against the state.
   While a backlog lasts (this step and the next take ``max_records_per_step`` each), the
   next step's range is read ahead in a thread as soon as this step's read is back, so the
   Spark read overlaps the diff, the commit and compaction; the next attempt uses it only
   when the range it binds (from a fresh log end) is exactly the range read ahead, and any
   other attempt drops it (:class:`ReadAhead`). Reading binds nothing and writes nothing,
   so a crash loses only the read.
3. Compare-and-append ``data`` and ``errors`` from ``[t]`` to ``[t+1]`` in one transaction.
4. Only then apply the updates to the in-memory state (the feedback: state is rebuilt from
   persist on start and advanced only by this process's own successful appends).

Any :class:`~sealcheck_upsert_source.persist.UpperMismatch` means another writer moved an upper:
this process
is fenced and stops at once (:class:`Fenced`).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from sealcheck_upsert_source import upsert
from sealcheck_upsert_source.failpoints import failpoint
from sealcheck_upsert_source.persist.api import Batch, Persist, Update, UpperMismatch
from sealcheck_upsert_source.source import Source, SourceUnavailable

BINDINGS, DATA, ERRORS = "bindings", "data", "errors"


class Fenced(RuntimeError):
    """Another writer appended to a collection this process was writing: stop writing."""


class StoreInconsistent(RuntimeError):
    """The store cannot be resumed from (e.g. bindings sealed behind data)."""


def _encode_bindings(offsets: dict[int, int]) -> dict[bytes, bytes]:
    return {str(p).encode(): str(o).encode() for p, o in offsets.items()}


def decode_bindings(state: dict[bytes, bytes]) -> dict[int, int]:
    """Bindings collection contents (partition → next offset) as integers."""
    return {int(k): int(v) for k, v in state.items()}


def choose_range(bound: dict[int, int], log_end: dict[int, int], cap: int) -> dict[int, int]:
    """The next bindings: every partition advanced towards its log end, ``cap`` records in all.

    The cap is shared fairly (water-filling over partitions in order), so a busy partition
    cannot starve the others. Offsets never go backwards.
    """
    avail = {p: max(0, end - bound.get(p, 0)) for p, end in sorted(log_end.items())}
    take = dict.fromkeys(avail, 0)
    left = cap
    open_parts = [p for p, a in avail.items() if a > 0]
    while left > 0 and open_parts:
        share = max(1, left // len(open_parts))
        for p in list(open_parts):
            grant = min(share, avail[p] - take[p], left)
            take[p] += grant
            left -= grant
            if take[p] == avail[p]:
                open_parts.remove(p)
            if left == 0:
                break
    nxt = dict(bound)
    for p, n in take.items():
        if n > 0:  # a partition enters the bindings only when it first moves
            nxt[p] = bound.get(p, 0) + n
    return nxt


def records_in(lo: dict[int, int], hi: dict[int, int]) -> int:
    """How many records the offsets ``[lo, hi)`` span over every partition."""
    return sum(o - lo.get(p, 0) for p, o in hi.items())


def diff_bindings(old: dict[int, int], new: dict[int, int], ts: int) -> list[Update]:
    """The ``bindings`` updates that move ``old`` offsets to ``new`` at step ``ts``."""
    out: list[Update] = []
    for p in sorted(new):
        if old.get(p) == new[p]:
            continue
        key = str(p).encode()
        if p in old:
            out.append(Update(key, str(old[p]).encode(), ts, -1))
        out.append(Update(key, str(new[p]).encode(), ts, +1))
    return out


@dataclass
class LoopConfig:
    """Tuning of the step loop."""

    max_records_per_step: int = 10_000
    #: keep at least this many steps of history when compacting (0 = never compact)
    retain_steps: int = 0
    #: compact every this many steps (when ``retain_steps`` > 0)
    compact_every: int = 10
    #: honour readers' read holds (the store's ``holds``), keeping up to this many steps for
    #: them; until a reader holds, keep this many (0: holds are not read, keep
    #: ``retain_steps``). A reader that stops advancing costs at most this much history.
    hold_steps: int = 0
    idle_backoff_s: tuple[float, float] = (0.05, 1.0)
    #: a deliberate bug, to show the checkers catch it (None: correct); see
    #: :data:`sealcheck_upsert_source.broken.BROKEN_MODES`
    # (:func:`sealcheck_upsert_source.broken.make_loop` applies it)
    broken: str | None = None


#: A read of exactly ``[lo, hi)``: each raw key's winning record.
Read = Callable[[dict[int, int], dict[int, int]], list[upsert.SourceRecord]]


class ReadAhead:
    """The next step's range ``[lo, hi)``, read by ``read`` in a daemon thread (a step at
    1M keys spends ~1.4 s in the Spark read and ~3 s more on the diff, the store's commit and
    compaction, which the read can overlap: issue 28)."""

    def __init__(self, read: Read, lo: dict[int, int], hi: dict[int, int]) -> None:
        self.lo, self.hi = dict(lo), dict(hi)
        self._records: list[upsert.SourceRecord] | None = None  # None: no outcome
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(read,), daemon=True)
        self._thread.name = "read-ahead"
        self._thread.start()

    def _run(self, read: Read) -> None:
        try:
            self._records = read(self.lo, self.hi)
        except BaseException as exc:  # raised where the records are taken, as a read's own
            self._error = exc

    def wait(self) -> None:
        """Wait for the read to end (its outcome is not wanted)."""
        self._thread.join()

    def result(self) -> list[upsert.SourceRecord]:
        """The records (waiting for the read); what the read raised, raised here."""
        self.wait()
        if self._error is not None:
            raise self._error
        if self._records is None:  # never an empty range for a read that did not end
            raise RuntimeError(f"the read ahead of {self.lo} to {self.hi} gave no outcome")
        return self._records


class StepLoop:
    """One incarnation of the pipeline over ``store`` and ``source``."""

    def __init__(
        self,
        store: Persist,
        source: Source,
        config: LoopConfig,
        log: Callable[[dict[str, object]], None],
    ) -> None:
        self.store, self.source, self.config, self.log = store, source, config, log
        self.t = 0
        self.replaying = False  # this step replays bindings sealed before a crash
        self.bound: dict[int, int] = {}
        self.data: dict[bytes, bytes] = {}
        self.errors: dict[bytes, bytes] = {}
        self._ahead: ReadAhead | None = None
        self._log_end: dict[int, int] = {}  # the one this step's range was chosen from

    # -- start-up --------------------------------------------------------------------
    def rehydrate(self) -> None:
        """Resume at ``t = upper(data)``: state and bindings as of ``t - 1`` from persist."""
        start = time.monotonic()
        uppers = self.store.uppers()
        t = uppers.get(DATA, 0)
        if uppers.get(ERRORS, 0) != t:
            raise StoreInconsistent(
                f"data is sealed at {t} but errors at {uppers.get(ERRORS, 0)}; they are "
                "always appended together, so this store was written by something else"
            )
        if uppers.get(BINDINGS, 0) < t:
            raise StoreInconsistent(
                f"bindings are sealed at {uppers.get(BINDINGS, 0)}, behind data at {t}: the "
                "offsets that produced the data are unknown, so the pipeline cannot resume"
            )
        self.t = t
        if t > 0:
            self._read_state(t)
        self.log(
            {
                "event": "rehydrated",
                "t": t,
                "keys": len(self.data),
                "errors": len(self.errors),
                "offsets": {str(p): o for p, o in sorted(self.bound.items())},
                "took_s": round(time.monotonic() - start, 3),
            }
        )

    def _read_state(self, t: int) -> None:
        """State and bindings as of ``t - 1`` from persist."""
        self.data = self.store.snapshot(DATA, t - 1)
        failpoint("rehydrate.mid")
        self.errors = self.store.snapshot(ERRORS, t - 1)
        self.bound = decode_bindings(self.store.snapshot(BINDINGS, t - 1))

    # -- one step --------------------------------------------------------------------
    def _bindings_for_step(self) -> dict[int, int] | None:
        """The offsets bound at ``t``: replayed if sealed, else newly chosen and appended."""
        t = self.t
        self.replaying = self.store.uppers().get(BINDINGS, 0) > t
        if self.replaying:
            return decode_bindings(self.store.snapshot(BINDINGS, t))
        self._log_end = self.source.log_end()
        nxt = choose_range(self.bound, self._log_end, self.config.max_records_per_step)
        if all(o == self.bound.get(p, 0) for p, o in nxt.items()):
            return None
        failpoint("bindings.before_append")
        self._append_bindings(nxt, t)
        failpoint("bindings.after_append")
        return nxt

    def _append_bindings(self, nxt: dict[int, int], t: int) -> None:
        """Seal the bindings of step ``t``; fenced when another writer moved the upper."""
        try:
            self.store.compare_and_append(BINDINGS, diff_bindings(self.bound, nxt, t), t, t + 1)
        except UpperMismatch as exc:
            raise Fenced(str(exc)) from exc

    def _read(self, lo: dict[int, int], hi: dict[int, int]) -> list[upsert.SourceRecord]:
        """The winning record of every raw key in exactly ``[lo, hi)``."""
        return self.source.read_winners(lo, hi)

    def _records(
        self, lo: dict[int, int], hi: dict[int, int], ahead: ReadAhead | None
    ) -> tuple[list[upsert.SourceRecord], bool]:
        """The step's records, and whether they were read ahead (only a read of exactly
        ``[lo, hi)`` is used; another is waited for and dropped, so one read runs at a time)."""
        if ahead is not None:
            if not self.replaying and (ahead.lo, ahead.hi) == (lo, hi):
                return ahead.result(), True
            ahead.wait()
        return self._read(lo, hi), False

    def _read_ahead(self, lo: dict[int, int], hi: dict[int, int]) -> None:
        """Start reading the step after ``[lo, hi)`` when both are full steps (a backlog),
        from the log end this step's range was chosen from (no Kafka call between binding
        and committing); not while replaying (the read would see this step's replay)."""
        cap = self.config.max_records_per_step
        if self.replaying or records_in(lo, hi) < cap:
            return
        nxt = choose_range(hi, self._log_end, cap)
        if records_in(hi, nxt) == cap:
            self._ahead = ReadAhead(self._read, hi, nxt)

    def _append_output(self, out: upsert.StepOutput, t: int) -> upsert.StepOutput:
        """Seal ``data`` and ``errors`` of step ``t`` in one transaction; what was appended
        (the state is advanced by exactly that)."""
        failpoint("data.before_append")
        try:
            self.store.compare_and_append_many(
                {DATA: Batch(out.data, t, t + 1), ERRORS: Batch(out.errors, t, t + 1)}
            )
        except UpperMismatch as exc:
            raise Fenced(str(exc)) from exc
        failpoint("data.after_commit")
        return out

    def step(self, read_ahead: bool = True) -> bool:
        """Seal one step; False when there was nothing new to bind. With ``read_ahead``, a
        backlog's next step is read while this one commits (not for a last step)."""
        started = time.monotonic()
        t = self.t
        # a read ahead is for this attempt only: one that failed or found nothing to bind
        # drops it, so no later step takes records read before a gap (Kafka may have lost
        # and reused those offsets since)
        pending, self._ahead = self._ahead, None
        nxt = self._bindings_for_step()
        if nxt is None:
            return False
        bound_at = time.monotonic()
        records, ahead = self._records(self.bound, nxt, pending)
        read_at = time.monotonic()
        if read_ahead:
            self._read_ahead(self.bound, nxt)
        out = upsert.upsert_step(records, self.data, self.errors, t)
        diffed_at = time.monotonic()
        out = self._append_output(out, t)
        appended_at = time.monotonic()
        upsert.apply(self.data, out.data)
        upsert.apply(self.errors, out.errors)
        count = records_in(self.bound, nxt)
        self.bound = nxt
        self.t = t + 1
        self.log(
            {
                "event": "sealed",
                "t": t,
                "offsets": {str(p): o for p, o in sorted(nxt.items())},
                "records": count,
                "winners": len(records),
                "read_ahead": ahead,  # the records were read while the last step committed
                "data": [sum(u.diff > 0 for u in out.data), sum(u.diff < 0 for u in out.data)],
                "errors": [
                    sum(u.diff > 0 for u in out.errors),
                    sum(u.diff < 0 for u in out.errors),
                ],
                "keys": len(self.data),
                "took_s": round(time.monotonic() - started, 3),
                # where the step's time went: sealing the bindings, the Spark read (winners
                # back in Python), the upsert diff, the data+errors commit, the state update
                "phases_s": {
                    "bind": round(bound_at - started, 3),
                    "read": round(read_at - bound_at, 3),
                    "diff": round(diffed_at - read_at, 3),
                    "append": round(appended_at - diffed_at, 3),
                    "apply": round(time.monotonic() - appended_at, 3),
                },
            }
        )
        self._maybe_compact()
        return True

    def _maybe_compact(self) -> None:
        cfg = self.config
        if cfg.retain_steps <= 0 or self.t % cfg.compact_every != 0:
            return
        since, held = self.t - cfg.retain_steps, None
        if cfg.hold_steps > 0:  # a reader's hold keeps more, up to hold_steps
            held = min(self.store.holds().values(), default=None)
            floor = self.t - cfg.hold_steps
            since = min(since, floor if held is None else max(held, floor))
        if since <= 0:
            return
        moved, started = [], time.monotonic()
        for collection in (BINDINGS, DATA, ERRORS):  # one transaction each
            if self.store.compact(collection, since):
                moved.append(collection)
            if collection == BINDINGS:
                failpoint("compact.between")
        failpoint("compact.after_commit")
        if moved:
            took = round(time.monotonic() - started, 3)
            event = {"event": "compacted", "since": since, "collections": moved, "took_s": took}
            self.log(event if held is None else {**event, "held": held})

    # -- the loop --------------------------------------------------------------------
    def run(self, stop: threading.Event, max_steps: int | None = None) -> int:
        """Seal steps until ``stop`` is set or ``max_steps`` were sealed; return the count.

        Idle or unreachable Kafka backs off exponentially between polls (no spinning).
        """
        lo, hi = self.config.idle_backoff_s
        delay, sealed = lo, 0
        while not stop.is_set() and (max_steps is None or sealed < max_steps):
            try:
                progressed = self.step(read_ahead=max_steps is None or sealed + 1 < max_steps)
            except SourceUnavailable as exc:
                self.log({"event": "source_unavailable", "t": self.t, "error": str(exc)[:300]})
                progressed = False
            if progressed:
                sealed += 1
                delay = lo
            else:
                stop.wait(delay)
                delay = min(hi, delay * 2)
        return sealed


def log_json(event: dict[str, object]) -> None:
    """Print one event as a JSON line (stdout, flushed: the harness reads it live)."""
    print(json.dumps(event, sort_keys=True), flush=True)
