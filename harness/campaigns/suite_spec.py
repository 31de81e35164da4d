"""A suite file (TOML): a matrix of chaos tests for nightly runs — systems under test x
backends x nemesis sets x seeds, with settings shared by all cases or by one matrix.

    name = "nightly"
    budget_s = 3600                 # optional; --budget overrides it
    [settings]                      # every case (any `sealcheck run` setting)
    duration = 30
    [[matrix]]
    systems = ["upsert-source"]          # default ["upsert-source"]
    backends = ["local"]            # default ["local"]
    nemeses = [["kill", "pause"], ["failpoint"], []]   # [] = the system's default mix
    seeds = "1-3"                   # or [1, 2, 3]
    settings = { interval = 5 }     # this matrix only

Every mistake is refused before anything runs, naming the value and what to write instead.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_TOP = {"name", "budget_s", "settings", "matrix"}
_MATRIX = {"systems", "backends", "nemeses", "seeds", "settings"}


class SuiteError(ValueError):
    """A suite file that cannot be run; the message says what to change."""


@dataclass(frozen=True)
class SuiteCase:
    """One chaos test of a suite."""

    system: str
    backend: str
    nemeses: tuple[str, ...] | None
    seed: int
    settings: tuple[tuple[str, Any], ...] = ()

    @property
    def id(self) -> str:
        """``pipeline-local-kill+pause-seed3``: unique in its suite, stable across nights."""
        faults = "+".join(self.nemeses) if self.nemeses else "default"
        return f"{self.system}-{self.backend}-{faults}-seed{self.seed}"

    @property
    def run_name(self) -> str:
        """The id as a run name (``sealcheck run --name``: no ``+``, which Docker refuses in
        the names of the run's network and containers)."""
        return self.id.replace("+", "_")


@dataclass(frozen=True)
class SuiteSpec:
    """A whole suite: its name, time budget and cases in the order they run."""

    name: str
    budget_s: float | None
    cases: tuple[SuiteCase, ...]


def parse_seeds(text: str) -> list[int]:
    """``"1-3,7"`` -> ``[1, 2, 3, 7]`` (a suite's ``seeds``, the plugin's
    ``--sealcheck-seeds``); :class:`SuiteError` naming the part that is wrong."""
    seeds: list[int] = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        lo, _, hi = part.partition("-")
        if not (lo.strip().isdigit() and (not hi or hi.strip().isdigit())):
            raise SuiteError(f"{part!r} is not a seed or a range; write e.g. 1-20 or 1,5,9")
        first, last = int(lo), int(hi or lo)
        if last < first:
            raise SuiteError(f"{part!r} is an empty range; write the lower seed first")
        seeds += range(first, last + 1)
    if not seeds:
        raise SuiteError(f"{text!r} names no seed; write e.g. 1-20")
    return seeds


def _seeds(value: Any, where: str) -> list[int]:
    if isinstance(value, list) and value and all(isinstance(s, int) for s in value):
        return list(value)
    try:
        return parse_seeds(value) if isinstance(value, str) else parse_seeds("")
    except SuiteError as exc:
        raise SuiteError(f"{where}: seeds = {value!r}: {exc} (or a list of integers)") from None


def _names(value: Any, where: str, field: str) -> list[str]:
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return list(value)
    raise SuiteError(f"{where}: {field} = {value!r}; write a non-empty list of names")


def _nemesis_sets(value: Any, where: str) -> list[tuple[str, ...] | None]:
    sets_ok = isinstance(value, list) and bool(value)
    if not sets_ok or not all(
        isinstance(s, list) and all(isinstance(n, str) for n in s) for s in value
    ):
        raise SuiteError(
            f"{where}: nemeses = {value!r}; write a list of nemesis lists, e.g. "
            '[["kill", "pause"], []] ([] is the default mix)'
        )
    return [tuple(s) or None for s in value]


def _table(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise SuiteError(f"{where} = {value!r}; write a table, e.g. {{ duration = 30 }}")
    return dict(value)


def parse_suite(doc: dict[str, Any], where: str = "suite") -> SuiteSpec:
    """The suite a TOML document describes (every case expanded, in matrix order)."""
    extra = sorted(set(doc) - _TOP)
    if extra:
        raise SuiteError(f"{where}: unknown key(s) {extra}; a suite has {sorted(_TOP)}")
    name = doc.get("name", "suite")
    if not isinstance(name, str) or not name:
        raise SuiteError(f"{where}: name = {name!r}; write a non-empty string")
    budget = doc.get("budget_s")
    if budget is not None and (not isinstance(budget, int | float) or budget <= 0):
        raise SuiteError(f"{where}: budget_s = {budget!r}; write a positive number of seconds")
    common = _table(doc.get("settings", {}), f"{where}: settings")
    matrices = doc.get("matrix")
    if not isinstance(matrices, list) or not matrices:
        raise SuiteError(f"{where}: no [[matrix]] table; add one with systems, nemeses, seeds")
    cases: list[SuiteCase] = []
    for i, m in enumerate(matrices):
        at = f"{where}: matrix {i + 1}"
        extra = sorted(set(m) - _MATRIX)
        if extra:
            raise SuiteError(f"{at}: unknown key(s) {extra}; a matrix has {sorted(_MATRIX)}")
        settings = {**common, **_table(m.get("settings", {}), f"{at}: settings")}
        shared = tuple(sorted(settings.items()))
        for system in _names(m.get("systems", ["upsert-source"]), at, "systems"):
            for backend in _names(m.get("backends", ["local"]), at, "backends"):
                for faults in _nemesis_sets(m.get("nemeses", [[]]), at):
                    for seed in _seeds(m.get("seeds", [1]), at):
                        cases.append(SuiteCase(system, backend, faults, seed, shared))
    ids = [c.id for c in cases]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise SuiteError(f"{where}: case {dup[0]!r} appears twice; give the matrices other seeds")
    return SuiteSpec(name, float(budget) if budget is not None else None, tuple(cases))


def load_suite(path: Path) -> SuiteSpec:
    """The suite in the TOML file ``path``."""
    try:
        doc = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise SuiteError(f"suite file {path} does not exist") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise SuiteError(f"suite file {path} cannot be read as TOML: {exc}") from None
    return parse_suite(doc, str(path))
