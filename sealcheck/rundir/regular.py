"""Only a run directory's own regular files are read: anything else in an input's place is
refused with one line before it is opened.

A FIFO opened for reading waits for a writer, and a symlink to ``/dev/zero`` never ends:
``sealcheck check`` hashing either would hang for ever. So every reader of a run directory's
inputs asks :func:`not_regular` first; it looks with ``lstat``/``stat`` and opens nothing. A
FIFO, a device, a socket or a directory is refused, and so is any path that resolves outside
the run directory (a symlink, or a symlinked folder, pointing elsewhere: its bytes are not the
run's). A symlink to a regular file *within* the run directory is read as that file (its
digest proves it like any other).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

__all__ = ["RESTORE", "NotRegularFile", "checked", "not_regular", "read_text"]

#: what to do about an input that is not the run's, said at the end of every such line
RESTORE = "restore it from the run, or re-run the test"

_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a directory"),
)


def not_regular(path: Path, root: Path) -> str | None:
    """Why ``path`` must not be read as a file of the run directory ``root``, in one line
    naming it (``…: restore it from the run, or re-run the test``); None when it is a regular
    file within ``root``, or when nothing is there (a missing file is the caller's to name).
    Opens nothing."""
    try:
        link = stat.S_ISLNK(os.lstat(path).st_mode)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return _refused(path, f"cannot be looked at ({type(exc).__name__}: {exc.strerror})")
    real = Path(os.path.realpath(path))
    inside = Path(os.path.realpath(root))
    if real != inside and inside not in real.parents:
        what = "a symlink to" if link else "reached through a symlink as"
        return _refused(path, f"is {what} {real}, outside the run directory {inside}")
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:  # a dangling symlink: missing, for the caller to name
        return None
    except OSError as exc:
        return _refused(path, f"cannot be looked at ({type(exc).__name__}: {exc.strerror})")
    if stat.S_ISREG(mode):
        return None
    kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
    via = f" (through a symlink to {real})" if link else ""
    return _refused(path, f"is {kind}{via}, not a regular file")


def _refused(path: Path, why: str) -> str:
    return f"{path} {why}: only the run's own regular files are read; {RESTORE}"


class NotRegularFile(OSError):
    """What a reader raises, before opening anything, for a path that is not a regular file of
    its run directory; its message is :func:`not_regular`'s one line."""


def checked(path: Path, root: Path) -> Path:
    """``path``, once :func:`not_regular` has nothing against it (:class:`NotRegularFile`
    otherwise): for a reader about to open it."""
    why = not_regular(path, root)
    if why is not None:
        raise NotRegularFile(why)
    return path


def read_text(path: Path, root: Path) -> str:
    """The text of a small file of the run directory ``root`` (:class:`NotRegularFile` when it
    is not a regular file within ``root``, before opening it)."""
    return checked(path, root).read_text()
