"""The docs' tables of files match the files git lists: the module table in
``docs/architecture.md`` (one row per product ``.py`` file, and one per bench script) and the
layout table in ``README.md`` (every top-level directory). ``scripts/module-table`` prints the
rows to add or drop, and ``scripts/module-table --write`` re-syncs the module table (a new
file's row from its docstring's first sentence)."""

from __future__ import annotations

import pytest

from tests.product import (
    MODULE_BLOCKS,
    ROOT,
    differences,
    in_git_checkout,
    listed,
    synced,
    top_level_dirs,
    tracked,
)

pytestmark = pytest.mark.skipif(not in_git_checkout(), reason="needs a git checkout")

ARCHITECTURE = ROOT / "docs" / "architecture.md"
README = ROOT / "README.md"

SAMPLE = """intro
<!-- modules: one row per file -->
| module | job |
| --- | --- |
| `a/__init__.py`, `a/__main__.py` | the package; `python -m a` |
| `a/gone.py` | moved away |
| `a/one.py` | one |
| `a/one.py` | one again |
<!-- /modules -->
outro
"""


def explain(name: str, missing: list[str], extra: list[str], twice: list[str]) -> str:
    """One failure message a person can act on."""
    lines = [f"docs/architecture.md's `{name}` table is out of step with git ls-files:"]
    lines += [f"  missing a row: `{path}`" for path in missing]
    lines += [f"  lists a file git does not have: `{path}`" for path in extra]
    lines += [f"  lists twice: `{path}`" for path in twice]
    lines.append("run scripts/module-table --write, then edit the new rows' job column")
    return "\n".join(lines)


@pytest.mark.parametrize("name", sorted(MODULE_BLOCKS))
def test_the_module_table_lists_exactly_the_files_git_lists(name: str) -> None:
    expected = MODULE_BLOCKS[name](tracked())
    assert expected, f"no files for block {name}"
    missing, extra, twice = differences(listed(ARCHITECTURE.read_text(), name), expected)
    assert not (missing or extra or twice), explain(name, missing, extra, twice)


def test_the_readme_layout_table_names_every_top_level_directory() -> None:
    files = tracked()
    paths = listed(README.read_text(), "layout")
    named = {path.rstrip("/") for path in paths}
    missing = [folder for folder in top_level_dirs(files) if folder not in named]
    assert not missing, f"README.md's layout table lacks a row for: {missing}"
    unknown = [
        path
        for path in paths
        if path.rstrip("/") not in files and not any(f.startswith(path) for f in files)
    ]
    assert not unknown, f"README.md's layout table names paths git does not list: {unknown}"


def test_a_table_out_of_step_is_caught_and_synced(monkeypatch: pytest.MonkeyPatch) -> None:
    expected = ["a/__init__.py", "a/__main__.py", "a/one.py", "a/two.py"]
    missing, extra, twice = differences(listed(SAMPLE, "modules"), expected)
    assert (missing, extra, twice) == (["a/two.py"], ["a/gone.py"], ["a/one.py"])
    monkeypatch.setattr("tests.product.docstring_line", lambda path: f"the job of {path}")
    fixed = synced(SAMPLE, "modules", expected)
    assert differences(listed(fixed, "modules"), expected) == ([], [], [])
    assert fixed.startswith("intro\n<!-- modules: one row per file -->\n| module | job |")
    assert "| `a/__init__.py`, `a/__main__.py` | the package; `python -m a` |" in fixed
    assert "| `a/one.py` | one |\n| `a/two.py` | the job of a/two.py |\n<!-- /modules -->" in fixed
    assert fixed.endswith("<!-- /modules -->\noutro\n")
