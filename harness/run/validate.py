"""Whether the built parts of a test fit together, in one pass (:meth:`Test.validate`).

:mod:`sealcheck.harness.run.config` checks each setting's own shape (types, ranges);
:func:`~sealcheck.harness.run.test.build_test` resolves the names the spec gives (a name that
resolves to nothing is a :class:`ConfigError` there). What is left is checked here, against the
parts themselves: the system under test, the backend's capabilities and the nemeses as built —
so a fault the run cannot host, a system the backend cannot run or a broken mode the system
lacks is one clear line before anything starts.
"""

from __future__ import annotations

from collections.abc import Mapping

from sealcheck.core.capabilities import CAPABILITIES
from sealcheck.harness.run.config import ConfigError, TestConfig
from sealcheck.nemeses import Nemesis
from sealcheck.systems import SystemUnderTest

#: Requirements met by a lazy (FUSE) disk: a run with a nemesis that needs one needs FUSE.
LAZY_DISKS = frozenset({"lazy-disk", "broker-lazy-disk"})


def backend_capabilities(factory: object) -> frozenset[str]:
    """What a built backend factory offers (the registry's factories are the backend classes,
    whose ``capabilities`` say it); a factory that does not say offers nothing optional."""
    offered: frozenset[str] = getattr(factory, "capabilities", frozenset())
    return frozenset(offered)


def _need(ok: bool, what: str) -> None:
    if not ok:
        raise ConfigError(what)


def _hint(option: str, places: list[str]) -> str:
    """``; use --backend local or containers`` (nothing when no place would do)."""
    return f"; use {option} {' or '.join(places)}" if places else ""


def validate_parts(
    spec: TestConfig,
    sut: SystemUnderTest,
    capabilities: frozenset[str],
    nemeses: Mapping[str, Nemesis],
) -> None:
    """Refuse, in one clear line (:class:`ConfigError`), a composition that cannot run: a
    nemesis whose requirements neither ``capabilities`` (the backend's) nor ``sut`` offer, a
    Spark cluster the system cannot use, a lazy disk without FUSE, a system the backend cannot
    host, a broken mode the system lacks."""
    from sealcheck.infra.backends import NAMES
    from sealcheck.infra.backends import capabilities as capabilities_of

    def where(lacking: set[str] | frozenset[str]) -> list[str]:
        """The backends where ``sut`` would have everything in ``lacking`` (for the hint)."""
        return [b for b in NAMES if not set(lacking) - capabilities_of(b) - sut.offers(b)]

    offered = capabilities | sut.offers(spec.backend)
    _need(
        spec.spark != "cluster" or "spark-cluster" in offered,
        f"spark='cluster': {spec.system!r} cannot submit to a Spark cluster; use --spark "
        "connect or local",
    )
    for name, nemesis in nemeses.items():
        _need(
            spec.spark == "cluster" or "spark-cluster" not in nemesis.requires,
            f"nemesis {name!r} acts on a Spark cluster's workers; add --spark cluster",
        )
        lacking = sorted(nemesis.requires - offered)
        _need(
            not lacking,
            f"nemesis {name!r} needs {' and '.join(CAPABILITIES.get(c, c) for c in lacking)}, "
            f"which {spec.system!r} on the {spec.backend} backend lacks"
            + _hint("--backend", where(set(lacking))),
        )
    if any(n.requires & LAZY_DISKS for n in nemeses.values()):
        from sealcheck.infra.lazy_disk import FUSE_HINT, fuse_missing

        why = fuse_missing()
        _need(not why, f"{why}: {FUSE_HINT}")
    lacking = sorted(sut.requires - capabilities)
    hosts = [b for b in NAMES if sut.requires <= capabilities_of(b)]
    _need(
        not lacking,
        f"system {spec.system!r} needs {' and '.join(CAPABILITIES.get(c, c) for c in lacking)}, "
        f"which the {spec.backend} backend lacks" + _hint("--backend", hosts),
    )
    _need(
        spec.broken is None or spec.broken in sut.broken_modes,
        f"broken={spec.broken!r}: {spec.system!r} has the broken modes "
        f"{', '.join(sut.broken_modes) or '(none)'}",
    )
