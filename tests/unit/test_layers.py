"""No import circles anywhere in Sealcheck's packages (the layers themselves are import-linter
contracts in pyproject.toml, checked by ``lint-imports`` in ``tox -e lint``)."""

from __future__ import annotations

import grimp

#: Every installed top-level package (harness/, nemeses/ and checkers/ are reached through
#: ``sealcheck``'s links, under their installed names).
PACKAGES = ("sealcheck", "sealcheck_pytest", "sealcheck_upsert_source", "sealcheck_delta_streaming")


def circles() -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan, iteratively)."""
    graph = grimp.build_graph(*PACKAGES)
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


def test_no_module_imports_itself_back() -> None:
    assert circles() == []
