"""One name per thing of a run directory, and the names runs stored before them used: kept
here only, so every reader accepts both and no other module spells an old name.

=========================================  ===================  ==========================
thing                                      name                 old name (still read)
=========================================  ===================  ==========================
the archive of runs (default folder)       ``runs/``            ``store/`` (not read)
the system's state exported into a run     ``export/``          ``persist/``
one incarnation's log                      ``logs/sut-N.log``   ``logs/pipeline-N.log``
the supervisor's ops                       ``sut-start``,       ``pipeline-start``,
                                           ``sut-exit``,        ``pipeline-exit``,
                                           ``sut-start-failed`` ``pipeline-start-failed``
the system's events                        ``sut-event``        (not recorded then)
our system under test (``--system``)       ``upsert-source``    ``pipeline``
=========================================  ===================  ==========================

The history's ops about the system under test (``process type f value``):

* ``supervisor info sut-start`` ``{incarnation, pid, failpoints}``: an incarnation started,
  with the failpoints armed at that moment;
* ``supervisor info sut-start-failed`` ``{incarnation, attempt, error}``: starting one failed;
* ``supervisor info sut-exit`` ``{incarnation, pid, code, failpoint, zombie?, signal?, fired?,
  last_event?}``: it exited (``sealcheck.harness.run.exits.exit_evidence``);
* ``sut info sut-event`` ``{incarnation, event, fields}``: one event the incarnation logged
  (a JSON line ``{"event": name, ...}``; only the kinds in :data:`SUT_EVENTS`): its name, and
  its other fields nested in ``fields`` as it logged them — nested, so a field of the system's
  own (``partition``, ``offset``, anything) never meets the fields the history's readers type.
  When the fields cannot be recorded as they are (not plain JSON: NaN, infinity, nesting deeper
  than 32; or a line longer than 8,000 characters) the op has ``note`` (why) instead of
  ``fields``. :func:`event_fields` reads either form, and the flat form (the fields beside
  ``event``) of runs recorded before. The supervisor reads each incarnation's log while it
  runs, so an event is in the history within a second or so of being logged, and always before
  its incarnation's ``sut-exit``;
* ``supervisor info sut-event-reader-failed`` ``{incarnation, when, error}``: reading its
  events failed (once per incarnation); the run goes on, and what was not read while it ran is
  read at its exit.

:meth:`sealcheck.rundir.history.History.load` gives every op its current name
(:func:`current`), so a reader of a loaded history compares with the constants below only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

#: the default folder of the archive of runs (``--runs``)
RUNS_DIR = "runs"
#: where a run directory keeps the system's exported state (the checkers' inputs)
EXPORT_DIR = "export"
#: the export's folder in runs stored before it was named :data:`EXPORT_DIR`
OLD_EXPORT_DIR = "persist"
#: an incarnation's log in runs stored before it was named by :func:`sut_log`
OLD_LOG = "pipeline-{n}.log"

#: systems under test by the name configs and ``test.json`` of runs stored before spelled them
OLD_SYSTEMS = {"pipeline": "upsert-source"}

SUT_START = "sut-start"
SUT_START_FAILED = "sut-start-failed"
SUT_EXIT = "sut-exit"
#: one event the system under test logged (``value``: ``incarnation``, ``event``, ``fields``)
SUT_EVENT = "sut-event"
#: reading an incarnation's events failed (``supervisor info``, ``value``: ``incarnation``,
#: ``when``, ``error``): recorded once; the events not read then are read at its exit
SUT_EVENT_READER_FAILED = "sut-event-reader-failed"
#: the process of :data:`SUT_EVENT` ops
SUT_PROCESS = "sut"
#: the ops' names in runs stored before they were named as above
#: the nemeses' actions on the system under test in runs stored before its role was ``sut``
#: (a history's ``nemesis`` ops, a saved schedule)
OLD_ACTIONS = {
    "kill-pipeline": "kill-sut",
    "pause-pipeline": "pause-sut",
    "resume-pipeline": "resume-sut",
}
#: partition kinds (an action's ``value["kind"]``) in runs stored before the same rename
OLD_KINDS = {"pipeline-kafka": "sut-kafka", "pipeline-postgres": "sut-database"}
OLD_OPS = {
    "pipeline-start": SUT_START,
    "pipeline-start-failed": SUT_START_FAILED,
    "pipeline-exit": SUT_EXIT,
    **OLD_ACTIONS,
}

#: the keys of an anomaly's context (``results.json``) naming the system's last start and exit
#: before its step (:meth:`sealcheck.rundir.history.History.context_at`)
LAST_START, LAST_EXIT = "last_sut_start", "last_sut_exit"
#: those keys in runs judged before the rename
OLD_CONTEXT = {"last_pipeline_start": LAST_START, "last_pipeline_exit": LAST_EXIT}

#: The events of the system under test the supervisor records as :data:`SUT_EVENT` ops: its
#: life (``started``, ``rehydrated``, ``stopped``, ``fenced``, ``crashed``, ``store_error``), a
#: failpoint that fired or was ignored, a micro-batch started or done (``batch_start``,
#: ``batch``) and a compaction. Per-step events (``sealed``) stay in the log only: the observer's
#: ``uppers`` ops already time every seal, and one op per step would double the history.
SUT_EVENTS = frozenset(
    {
        "started",
        "rehydrated",
        "stopped",
        "fenced",
        "crashed",
        "store_error",
        "failpoint",
        "failpoint_ignored",
        "batch_start",
        "batch",
        "compacted",
    }
)


def current(f: Any) -> Any:
    """An op's ``f`` by its current name (an old name mapped, anything else as it is)."""
    return OLD_OPS.get(f, f) if isinstance(f, str) else f


def event_fields(value: Any) -> dict[str, Any]:
    """The fields a :data:`SUT_EVENT` op's ``value`` records of its event (besides its name):
    ``fields``, or — in runs recorded before they were nested — the keys beside ``event``
    (but ``incarnation``); empty when none were recorded."""
    if not isinstance(value, dict):
        return {}
    fields = value.get("fields")
    if isinstance(fields, dict):
        return fields
    if "fields" in value or "note" in value:
        return {}
    return {k: v for k, v in value.items() if k not in ("event", "incarnation")}


def current_action(doc: Any) -> Any:
    """A saved schedule's action (``test.json``) by its current names: its ``f``
    (:data:`OLD_ACTIONS`) and a partition's ``value["kind"]`` (:data:`OLD_KINDS`)."""
    if not isinstance(doc, dict):
        return doc
    out = {**doc, "f": current(doc.get("f"))}
    value = doc.get("value")
    if isinstance(value, dict) and isinstance(value.get("kind"), str):
        out["value"] = {**value, "kind": OLD_KINDS.get(value["kind"], value["kind"])}
    return out


def current_context(context: dict[str, Any]) -> dict[str, Any]:
    """An anomaly's context with its keys by their current names (:data:`OLD_CONTEXT`)."""
    return {OLD_CONTEXT.get(k, k): v for k, v in context.items()}


def sut_log(n: int) -> str:
    """The name of incarnation ``n``'s log in the run's ``logs/``."""
    return f"sut-{n}.log"


def log_of(run_dir: Path, n: Any) -> str | None:
    """Incarnation ``n``'s log relative to ``run_dir`` (``logs/sut-N.log``, or the old name when
    only that exists); None when there is none."""
    for name in (sut_log(n), OLD_LOG.format(n=n)):
        if (run_dir / "logs" / name).is_file():
            return f"logs/{name}"
    return None


def export_dir(run_dir: Path) -> str:
    """The export's folder in ``run_dir``: :data:`EXPORT_DIR`, or :data:`OLD_EXPORT_DIR` in a
    run stored before the rename (only that one exists)."""
    if not (run_dir / EXPORT_DIR).exists() and (run_dir / OLD_EXPORT_DIR).is_dir():
        return OLD_EXPORT_DIR
    return EXPORT_DIR
