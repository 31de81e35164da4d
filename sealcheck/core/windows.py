"""A job's crash windows as seen from outside: no failpoint in the job, only what it writes.

A :class:`CrashWindow` opens when the job shows it has begun something — a new file in a
directory it writes (a checkpoint's ``offsets/N``, a Delta table's ``_delta_log`` commit) or a
line of its log — and closes when it shows it has finished (``commits/N``). The ``window``
nemesis (:mod:`sealcheck.nemeses.window`) kills the job a planned delay after a planned
occurrence of the opening, and then records whether the closing had happened: evidence that the
kill landed inside the window, or not.

A system declares its windows by name (:attr:`sealcheck.systems.api.SystemUnderTest.windows`),
with paths relative to its directory (a job's :attr:`sealcheck.systems.job.JobRun.dir`);
:func:`streaming_windows` gives the windows every Structured Streaming job has.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class CrashWindow:
    """Where a crash hurts, told by what the job writes.

    ``opens``: a regular expression matched in full against the name of a new file in the
    directory ``opens_in`` (relative to the job's directory) — or, with ``opens_in`` None,
    searched in each new line of the job's log. Its first group, if any, is ``{n}`` in
    ``closes``. ``closes``: the same, for the file (in ``closes_in``) or log line that closes
    the window; None: the window has no observable end (a kill is then always inside it)."""

    opens: str
    opens_in: str | None = None
    closes: str | None = None
    closes_in: str | None = None
    #: what is under way in the window, for people
    what: str = ""

    def __post_init__(self) -> None:
        for pattern in (self.opens, self.closes):
            if pattern is not None:
                re.compile(pattern.replace("{n}", "0"))  # a bad pattern fails where it is written

    def closing(self, n: str | None) -> re.Pattern[str] | None:
        """The closing pattern for the opening whose first group was ``n``."""
        if self.closes is None:
            return None
        return re.compile(self.closes.replace("{n}", re.escape(n) if n is not None else r"\d+"))


def streaming_windows(
    checkpoint: str = "checkpoint", delta_tables: Sequence[str] = ()
) -> Mapping[str, CrashWindow]:
    """The crash windows of a Structured Streaming query with its checkpoint at
    ``checkpoint`` (relative to the job's directory), for every micro-batch N:

    * ``after-offsets``: ``offsets/N`` is written (the batch is planned) and ``commits/N`` is
      not yet: the batch is read and its sink written in here, and a restart replays it;
    * ``after-commit:<table>``, for each Delta table in ``delta_tables``: a new commit of the
      table's ``_delta_log`` and no new ``commits/N`` yet — the sink committed and the query
      has not recorded it (the window in which Paimon's and Hudi's Spark sinks once committed
      a replayed batch twice). It is milliseconds wide: a kill from outside lands in it only
      sometimes, and the evidence says when.
    """
    offsets, commits = f"{checkpoint}/offsets", f"{checkpoint}/commits"
    out = {
        "after-offsets": CrashWindow(
            r"(\d+)", offsets, r"{n}", commits, "batch N planned, before commits/N"
        )
    }
    for table in delta_tables:
        name = table.rstrip("/").rsplit("/", 1)[-1]
        out[f"after-commit:{name}"] = CrashWindow(
            r"(\d+)\.json",
            f"{table}/_delta_log",
            r"\d+",
            commits,
            f"{name} committed, before the batch's commits/N",
        )
    return out


@dataclass(frozen=True)
class Boundary:
    """A commit boundary of a job, held from below (the lazy disk's crash points): the side
    ``when`` (``before`` / ``after``) of the ``op`` (a ``rename`` unless said) on a file
    matching ``path`` (a regular expression over the mount path) — the moment a window opens
    or closes, or the sink's first commit or write after it opened (``gate``). ``do`` says
    what happens there (``kill`` the job, or ``fail`` the call with ``errno``); ``what`` says,
    for people, what a crash there leaves."""

    window: str
    edge: str
    path: str
    when: str
    what: str
    #: files whose next write after each such rename is made late (``closed``: every file
    #: outside the checkpoint's folder, the sink's) so a write not awaited is still in flight
    slow: str = ""
    op: str = "rename"
    #: the boundary is the first ``op`` on ``path`` after a rename of a file matching this
    #: (the window's opening file); empty: the ``op`` itself is the boundary
    gate: str = ""
    do: str = "kill"
    errno: str = ""
    #: an fsync counts only on a file written since its last fsync with at least this many
    #: bytes at once: a commit's sync, not a header's alone (0: every fsync)
    min_write: int = 0
    #: a crash here leaves a batch whose sink has (at least partly) committed for the restart
    #: to replay (``closing``, ``committed``): the pattern of the file whose rename ends that
    #: replay, ``{n}`` the batch (``^/checkpoint/commits/{n}$``), and of the sink's files —
    #: what the restart then did is in the coverage; empty: no replay
    replay_until: str = ""
    sink: str = ""
    #: the crash lands once the call has returned, before the job's next call on its disk
    #: (``committed``: a commit seen by every reader, not one killed inside its fsync)
    next_call: bool = False
    #: the occurrence it is at (0: the seed's choice), counted in a restarted incarnation
    #: alone (``restart``: the harness spares the running one, then kills it, so the count
    #: starts with the first commit its successor makes — a crash inside recovery)
    k: int = 0
    restart: bool = False


NUMBER = r"\d+"

#: a window's edges, each a boundary: which file's rename, its side, what a crash there leaves
EDGES = {
    "opened": ("opens", "after", "just after {opening} is in place, before what follows it"),
    "closing": ("closes", "before", "all done but {closing}: a restart redoes the work"),
    "closed": ("closes", "after", "just after {closing}: a write not awaited may be in flight"),
}
#: the least write (bytes) after which a sink's fsync is a commit's: a page, not the 32-byte
#: header SQLite syncs alone when it starts a new WAL (the first transaction after each reset)
COMMIT_WRITE = 512

#: edges aimed at only once the others are covered, in a seeded cover of a job's boundaries
#: (:mod:`sealcheck.nemeses.boundary`): a crash just after a window opens is what a random
#: kill already does; the others are where a job's own mistakes show
LATER = frozenset({"opened", "unwritable"})

#: a window's edge on the checkpoint itself (only for a window closed by its own opening's
#: ``{n}``): the write of the closing file's temporary file (Spark's checkpoint writes
#: ``.N.<uuid>.tmp`` and renames it to ``N``) fails with ``EIO``, a disk that breaks under
#: the checkpoint. Aimed at once the sink's edges are covered (:data:`LATER`)
UNWRITABLE = (
    "the write of {closing} fails with EIO (a broken disk under the checkpoint): the job must "
    "fail the batch cleanly and, restarted, redo it without loss"
)

#: a window's edges inside the sink (the files outside the closing file's top folder), after
#: its opening: the op, its side, what happens, what a crash there leaves (only for a window
#: closed by its own opening's ``{n}``: the sink's files are written between them)
SINK_EDGES = {
    "committed": (
        "fsync", "after", "kill", "",
        "just after the sink's first commit after {opening} returned (an fsync after a commit "
        "frame in a SQLite WAL), before the job's next call: {closing} is not written, "
        "a restart replays a batch whose sink has (at least partly) committed",
    ),
    "full": (
        "write", "before", "fail", "ENOSPC",
        "the sink's first write after {opening} fails with ENOSPC (disk full): the job must "
        "fail the batch and redo it, never go on without it",
    ),
}  # fmt: skip


def _file(folder: str, name: str) -> str:
    """The anchored mount path pattern of a file named ``name`` (``{n}``: any number) in
    ``folder``."""
    return f"^/{re.escape(folder.strip('/'))}/{name.replace('{n}', NUMBER)}$"


def _shown(folder: str, name: str) -> str:
    """``folder/name`` for people: every number pattern shown as ``N``."""
    for number in ("(\\d+)", NUMBER, "{n}"):
        name = name.replace(number, "N")
    return f"{folder.strip('/')}/{name.replace(chr(92), '')}"


def _replayed(w: CrashWindow) -> tuple[str, str]:
    """A window closed by its own opening's ``{n}``: the closing file's pattern with ``{n}``
    kept (whose rename ends a replay of batch n), and the sink's files (every file outside
    the closing file's top folder)."""
    folder = str(w.closes_in).strip("/")
    top = re.escape(folder.split("/")[0])
    return f"^/{re.escape(folder)}/{w.closes}$", f"^/(?!{top}/)"


#: how many of a restarted incarnation's first commits to its store are boundaries
#: (``restart:commit-1`` ...): enough for every commit of a step (our pipeline's: the step's
#: bindings, its data and errors, a compaction), whichever one the restart begins with
RESTART_COMMITS = 3


def restart_boundaries(commit_files: str, commits: int = RESTART_COMMITS) -> dict[str, Boundary]:
    """The boundaries of a store whose files match ``commit_files`` (a regular expression over
    the mount path; empty: none): ``restart:commit-k`` for k = 1 .. ``commits`` — the running
    incarnation is killed, and its successor is killed again just after its ``k``-th commit
    to the store has returned (an fsync after a SQLite WAL commit frame, or after a page's
    write elsewhere), before its next call. Whatever the store's commits are and in whatever
    order a restart makes them, the ``k``-th is a different one for each ``k``: a step's
    commits are each followed by a crash, the way ALICE puts one after every durable call."""
    if not commit_files:
        return {}
    re.compile(commit_files)
    what = (
        "just after a restarted incarnation's commit #{k} to its store returned, before its "
        "next call: a step whose commits are not one transaction is left half-made"
    )
    return {
        f"restart:commit-{k}": Boundary(
            "restart",
            f"commit-{k}",
            commit_files,
            "after",
            what.format(k=k),
            op="fsync",
            min_write=COMMIT_WRITE,
            next_call=True,
            k=k,
            restart=True,
        )
        for k in range(1, commits + 1)
    }


def boundaries(windows: Mapping[str, CrashWindow], commit_files: str = "") -> dict[str, Boundary]:
    """The boundaries of ``windows`` by name (``<window>:<edge>``, :data:`EDGES`), for each
    window opened and closed by files: ``opened`` (after the rename that opens it),
    ``closing`` (before the rename that closes it: for ``after-offsets``, the batch's sink has
    committed and ``commits/N`` is not written — the replay window of any sink) and
    ``closed`` (after that rename; the job's next write outside the checkpoint's folder
    after each closing is made late, so a write not awaited is still in flight). Two
    windows closed by the same file share their ``closing`` and ``closed`` boundaries (the
    one closed by its own opening's ``{n}`` names them). That one also has the sink's edges
    (:data:`SINK_EDGES`): ``committed`` (after the first fsync outside the checkpoint's folder
    after the opening: a sink's commit, as SQLite's in WAL mode) and ``full`` (its first write
    after the opening fails with ``ENOSPC``). With ``commit_files``, also the store's
    commits after a restart (:func:`restart_boundaries`)."""
    out: dict[str, Boundary] = restart_boundaries(commit_files)
    seen: set[tuple[str, str]] = set()
    # a window closed by its own opening's {n} first: the shared closing is named after it
    for name in sorted(windows, key=lambda n: ("{n}" not in str(windows[n].closes), n)):
        w = windows[name]
        if w.opens_in is None or w.closes is None or w.closes_in is None:
            continue
        files = {"opens": _file(w.opens_in, w.opens), "closes": _file(w.closes_in, w.closes)}
        words = {"opening": _shown(w.opens_in, w.opens), "closing": _shown(w.closes_in, w.closes)}
        for edge, (side, when, text) in EDGES.items():
            if (files[side], when) in seen:
                continue
            seen.add((files[side], when))
            top = w.closes_in.strip("/").split("/")[0]
            slow = f"^/(?!{re.escape(top)}/)" if edge == "closed" else ""
            what = text.format(**words)
            again = edge == "closing" and "{n}" in w.closes  # the batch of offsets/N: replayed
            until, sink = _replayed(w) if again else ("", "")
            out[f"{name}:{edge}"] = Boundary(
                name, edge, files[side], when, what, slow, replay_until=until, sink=sink
            )
        if "{n}" not in w.closes:
            continue
        until, sink = _replayed(w)
        temporary = f"^/{re.escape(w.closes_in.strip('/'))}/\\.{NUMBER}\\.[^/]*\\.tmp$"
        out[f"{name}:unwritable"] = Boundary(
            name, "unwritable", temporary, "before", UNWRITABLE.format(**words), op="write",
            do="fail", errno="EIO",
        )  # fmt: skip
        for edge, (op, when, do, code, text) in SINK_EDGES.items():
            what, least = text.format(**words), COMMIT_WRITE if op == "fsync" else 0
            out[f"{name}:{edge}"] = Boundary(
                name, edge, sink, when, what, op=op, gate=files["opens"], do=do, errno=code,
                min_write=least, replay_until=until if do == "kill" else "", sink=sink,
                next_call=do == "kill",
            )  # fmt: skip
    return out
