"""The job's own error, found in an incarnation's log, and the log's last lines: what the
supervisor records in a ``sut-exit`` op (``error``, ``log_tail``) when an incarnation exited by
itself, and prints as it happens (:mod:`sealcheck.harness.run.exits`).

:func:`job_error` picks, in this order:

1. the exception of the last Python traceback: the first line after its frames (``ValueError:
   boom``; a ``Py4JJavaError`` with the Java exception on the line after it, joined) — not the
   log's last line, which a JVM's shutdown hooks usually write after the traceback;
2. else the last line that names an error: a Java ``Exception in thread "main" …``, the root
   cause of a stack trace (its last ``Caused by: …``), the top of one (``org.x.FooException:
   …`` followed by ``\\tat …``), a Spark error class (``[DELTA_MULTIPLE_SOURCE_ROW_…] …``) or
   a JSON event line with an ``error`` field (``{"event": "crashed", "error": …}``);
3. else the last non-empty line;

capped at :data:`MAX_ERROR_CHARS`; None when the log holds nothing but blanks.
"""

from __future__ import annotations

import json
import re

from sealcheck.core.said import cut

#: the longest error line recorded and printed (characters; longer ones are cut with "…")
MAX_ERROR_CHARS = 300
#: how many of the log's last lines a ``sut-exit`` op keeps (``log_tail``) ...
TAIL_LINES = 20
#: ... and at most this many characters of them (the end kept)
TAIL_CHARS = 4_000

_TRACEBACK = "Traceback (most recent call last):"
_JAVA_THREAD = re.compile(r'^Exception in thread "[^"]*" \S')
_CAUSED_BY = re.compile(r"^Caused by: \S")
#: a fully qualified Java exception or error class at the start of a line (the top of a trace)
_JAVA_TOP = re.compile(r"^(?:[a-z_][\w$]*\.)+[A-Z][\w$]*(?:Exception|Error)(?::|$)")
#: a Spark error class, e.g. [DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE]
_ERROR_CLASS = re.compile(r"\[[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\]")


def _python_exception(lines: list[str]) -> str | None:
    """The exception line of the last Python traceback in ``lines`` (None: there is none)."""
    start = max((i for i, line in enumerate(lines) if line.strip() == _TRACEBACK), default=None)
    if start is None:
        return None
    for i in range(start + 1, len(lines)):
        line = lines[i]
        if not line.strip() or line[:1].isspace():  # a frame, its code, its carets
            continue
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if nxt.startswith(": ") and len(nxt) > 2:  # py4j: the Java exception on the next line
            return f"{line.strip()} {nxt.strip()}"
        return line
    return None


def _event_error(line: str) -> str | None:
    """The ``error`` of a JSON event line (``{"event": "crashed", "error": …}``), else None."""
    if not line.startswith('{"') or '"error"' not in line:
        return None
    try:
        doc = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(doc, dict):
        return None
    error, event = doc.get("error"), doc.get("event")
    if not isinstance(error, str) or not error.strip():
        return None
    return f"{event}: {error}" if isinstance(event, str) else error


def _named_error(lines: list[str]) -> str | None:
    """The last line of ``lines`` that names an error (Java, a Spark error class, an event)."""
    for i in range(len(lines) - 1, -1, -1):
        line = lines[i]
        if _JAVA_THREAD.match(line) or _CAUSED_BY.match(line) or _ERROR_CLASS.search(line):
            return line
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if _JAVA_TOP.match(line) and nxt.startswith(("\tat ", "    at ")):
            return line
        event = _event_error(line)
        if event is not None:
            return event
    return None


def job_error(log_text: str) -> str | None:
    """The job's own error in ``log_text`` as one line (the module's rules), or None when it
    printed nothing."""
    lines = log_text.splitlines()
    found = _python_exception(lines) or _named_error(lines)
    if found is None:
        found = next((line for line in reversed(lines) if line.strip()), None)
    return cut(found.strip(), MAX_ERROR_CHARS) if found is not None else None


def recorded_tail(log_text: str) -> str:
    """The last :data:`TAIL_LINES` lines of ``log_text``, at most :data:`TAIL_CHARS`
    characters of them (the end kept), without trailing blanks."""
    tail = "\n".join(log_text.rstrip().splitlines()[-TAIL_LINES:])
    return tail if len(tail) <= TAIL_CHARS else "…" + tail[-(TAIL_CHARS - 1) :]
