"""The product's files as git lists them: what the layout tests compare the tools and the docs
with (``tests/unit/test_layers.py``, ``tests/unit/test_docs_layout.py``,
``tests/integration/test_installed_names.py``, ``scripts/module-table``).

"As git lists them" is ``git ls-files`` plus the files git would add (untracked, not ignored),
that exist: on a clean clone that is exactly ``git ls-files``; in a working tree it already
counts a module someone added but has not committed yet.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
from collections import Counter
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Where product code lives in the repository → the import name it is installed under.
#: ``harness/``, ``nemeses/`` and ``checkers/`` stay at the root (the design asks for them) and
#: are linked into ``sealcheck/``, so they install as ``sealcheck.harness`` and so on.
HOMES = {
    "sealcheck": "sealcheck",
    "harness": "sealcheck.harness",
    "nemeses": "sealcheck.nemeses",
    "checkers": "sealcheck.checkers",
    "sealcheck_pytest": "sealcheck_pytest",
    "sealcheck_upsert_source": "sealcheck_upsert_source",
    "sealcheck_delta_streaming": "sealcheck_delta_streaming",
    "sealcheck_failpoint": "sealcheck_failpoint",
}

#: The installed top-level import names (every one starts with ``sealcheck``).
TOP_LEVEL = (
    "sealcheck",
    "sealcheck_pytest",
    "sealcheck_upsert_source",
    "sealcheck_delta_streaming",
    "sealcheck_failpoint",
)


def in_git_checkout() -> bool:
    """Whether the repository is a git checkout and git is on ``PATH``."""
    return shutil.which("git") is not None and (ROOT / ".git").exists()


def tracked() -> list[str]:
    """Every file of the repository as git lists it (see the module docstring), symlinks
    included (``sealcheck/harness`` is one), sorted, relative to the root."""
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    names = {name for name in out.split("\0") if name}
    return sorted(name for name in names if (ROOT / name).is_symlink() or (ROOT / name).exists())


def product_files(files: list[str] | None = None) -> list[str]:
    """The product's ``.py`` files under their repository paths (the links into ``sealcheck/``
    excluded: their files are counted once, at the root)."""
    chosen = []
    for name in tracked() if files is None else files:
        top = name.split("/", 1)[0]
        if top in HOMES and name.endswith(".py") and not (ROOT / name).is_symlink():
            chosen.append(name)
    return chosen


def module_name(path: str) -> str:
    """The installed import name of a product file: ``harness/run/config.py`` →
    ``sealcheck.harness.run.config``; a package's ``__init__.py`` → the package."""
    top, _, rest = path.partition("/")
    parts = [HOMES[top], *rest.removesuffix(".py").split("/")]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def installed_path(path: str) -> str:
    """Where a product file sits in the wheel: ``harness/run/config.py`` →
    ``sealcheck/harness/run/config.py``."""
    top = path.split("/", 1)[0]
    return HOMES[top].replace(".", "/") + path[len(top) :]


def top_level_dirs(files: list[str] | None = None) -> list[str]:
    """The repository's top-level directories that hold a file git lists."""
    names = tracked() if files is None else files
    return sorted({name.split("/", 1)[0] for name in names if "/" in name})


# The docs' tables of files: a block between ``<!-- NAME ... -->`` and ``<!-- /NAME -->``
# holding a Markdown table whose first cell names one or more paths in backticks.

#: The module table's blocks in docs/architecture.md and the files each must list.
MODULE_BLOCKS: dict[str, Callable[[list[str]], list[str]]] = {
    "modules": product_files,
    "bench": lambda files: [f for f in files if f.startswith("bench/") and f.endswith(".py")],
}


def block(text: str, name: str) -> tuple[int, int]:
    """The character span of block ``name``'s contents (between its two markers)."""
    opening, closing = f"<!-- {name}", f"<!-- /{name} -->"
    start = text.find(opening)
    end = text.find(closing, start + 1) if start >= 0 else -1
    if end < 0:
        raise ValueError(f"no block {opening} ... --> ... {closing} in the text")
    start = text.index("-->", start) + len("-->")
    return start, end


def row_paths(line: str) -> list[str]:
    """The paths in backticks in a table row's first cell; none for any other line (the
    header's first cell has none, the separator row none)."""
    cells = line.split("|")
    return cells[1].split("`")[1::2] if line.startswith("|") and len(cells) > 2 else []


def listed(text: str, name: str) -> list[str]:
    """Every path block ``name``'s table lists, in order (a path listed twice appears twice)."""
    start, end = block(text, name)
    return [path for line in text[start:end].splitlines() for path in row_paths(line)]


def differences(paths: list[str], expected: list[str]) -> tuple[list[str], list[str], list[str]]:
    """What a table lacks, what it lists that it should not, and what it lists twice."""
    counts = Counter(paths)
    twice = sorted(path for path, n in counts.items() if n > 1)
    return sorted(set(expected) - set(counts)), sorted(set(counts) - set(expected)), twice


def docstring_line(path: str) -> str:
    """A module's job for the table: the first sentence of its docstring, on one line."""
    doc = ast.get_docstring(ast.parse((ROOT / path).read_text())) or "TODO: no docstring"
    first = " ".join(doc.split("\n\n", 1)[0].split())
    cut = first.find(". ")
    job = (first if cut < 0 else first[: cut + 1]).rstrip(".").replace("|", "\\|")
    return job[:1].lower() + job[1:] if job[1:2].islower() else job


def _place(lines: list[str], path: str) -> int:
    """Where a new row for ``path`` goes: after the last row of a file in the same folder,
    else of the nearest folder above it, else after the last row (or before the block's end)."""
    rows = [i for i, line in enumerate(lines) if row_paths(line)]
    folders = path.split("/")[:-1]
    same = [
        i
        for i in rows
        if any(p.rpartition("/")[0] == "/".join(folders) for p in row_paths(lines[i]))
    ]
    for depth in range(len(folders), 0, -1):
        if same:
            break
        prefix = "/".join(folders[:depth]) + "/"
        same = [i for i in rows if any(p.startswith(prefix) for p in row_paths(lines[i]))]
    return (same or rows or [len(lines) - 2])[-1] + 1


def synced(text: str, name: str, expected: list[str]) -> str:
    """``text`` with block ``name`` listing exactly ``expected``, once each: rows of files that
    are gone dropped (or the gone paths taken out of a row that names several), and for each
    new file a row from its docstring (:func:`_place` says where)."""
    start, end = block(text, name)
    want = set(expected)
    out: list[str] = []
    present: set[str] = set()
    for line in text[start:end].split("\n"):
        paths = row_paths(line)
        if not paths:
            out.append(line)
            continue
        kept = [path for path in paths if path in want and path not in present]
        if kept:
            cells = line.split("|")
            cells[1] = " " + ", ".join(f"`{path}`" for path in kept) + " "
            out.append("|".join(cells))
            present.update(kept)
    for path in sorted(want - present):
        out.insert(_place(out, path), f"| `{path}` | {docstring_line(path)} |")
    return text[:start] + "\n".join(out) + text[end:]
