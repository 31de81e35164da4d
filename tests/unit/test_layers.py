"""The import graph covers the whole product under its installed names, and has no circles.

The layers themselves are import-linter contracts in pyproject.toml, checked by
``lint-imports`` in ``tox -e lint``; this test makes sure that what grimp (and so
import-linter) sees is every product file — no package left out, no file missed through the
links of ``harness/``, ``nemeses/`` and ``checkers/`` into ``sealcheck/`` — and that no module
imports itself back.
"""

from __future__ import annotations

import tomllib
from typing import Any

import grimp
import pytest

from tests.product import ROOT, in_git_checkout, module_name, product_files

#: Every installed top-level package (harness/, nemeses/ and checkers/ are reached through
#: ``sealcheck``'s links, under their installed names).
PACKAGES = (
    "sealcheck",
    "sealcheck_pytest",
    "sealcheck_upsert_source",
    "sealcheck_delta_streaming",
    "sealcheck_failpoint",
)

needs_git = pytest.mark.skipif(not in_git_checkout(), reason="needs a git checkout")


@pytest.fixture(scope="module")
def graph() -> Any:
    return grimp.build_graph(*PACKAGES)


def circles(graph: Any) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(graph.find_modules_directly_imported_by(nxt)))))
                    break
                if nxt in on:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        member = stack.pop()
                        on.discard(member)
                        group.append(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        found.append(sorted(group))
    return found


def test_no_module_imports_itself_back(graph: Any) -> None:
    assert circles(graph) == []


def test_a_seeded_circle_is_found() -> None:
    seeded = grimp.ImportGraph()
    for importer, imported in [("a.x", "a.y"), ("a.y", "a.z"), ("a.z", "a.x"), ("a.z", "a.w")]:
        seeded.add_import(importer=importer, imported=imported)
    assert circles(seeded) == [["a.x", "a.y", "a.z"]]


@needs_git
def test_the_graph_holds_every_product_file_under_its_installed_name(graph: Any) -> None:
    files = product_files()
    expected = {module_name(path) for path in files}
    seen = set(graph.modules)
    assert len(expected) == len(files)
    missing, extra = sorted(expected - seen), sorted(seen - expected)
    assert not missing, f"product files grimp does not see (under their installed names): {missing}"
    assert not extra, f"modules grimp sees that are no product file git lists: {extra}"
    assert len(seen) == len(files)


@needs_git
def test_every_product_package_is_a_root_of_the_graph_and_of_the_contracts() -> None:
    installed = {module_name(path).split(".")[0] for path in product_files()}
    assert installed == set(PACKAGES)
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert set(config["tool"]["importlinter"]["root_packages"]) == set(PACKAGES)
    mypy_files = set(config["tool"]["mypy"]["files"])
    assert set(PACKAGES) <= mypy_files, "mypy checks every installed package"
    # the root folders are reached through sealcheck's links, never checked a second time
    assert not {"harness", "nemeses", "checkers"} & mypy_files
