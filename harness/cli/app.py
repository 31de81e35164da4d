"""The ``sealcheck`` command line.

Exit codes (one table, :data:`sealcheck.harness.campaigns.commands.EXIT_CODES`): 0 valid /
success, 1 invalid, 2 unknown, 130 interrupted, 254 bad arguments, 255 the harness itself
crashed. Bad input gets one clear line on stderr, never only a traceback.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from sealcheck.harness.campaigns.commands import (
    EXIT_BAD_ARGS,
    EXIT_CRASH,
    EXIT_INTERRUPTED,
    EXIT_INVALID,
    EXIT_TERMINATED,
    EXIT_UNKNOWN,
    EXIT_VALID,
    VERDICT_EXIT,
    positive,
)
from sealcheck.harness.run.signals import Terminated, on_sigterm

if TYPE_CHECKING:
    from sealcheck.checkers.result import RunResult

__all__ = [
    "EXIT_BAD_ARGS",
    "EXIT_CRASH",
    "EXIT_INTERRUPTED",
    "EXIT_INVALID",
    "EXIT_UNKNOWN",
    "EXIT_VALID",
    "build_parser",
    "main",
]


class _Parser(argparse.ArgumentParser):
    """argparse with Sealcheck's exit code for bad arguments."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_BAD_ARGS, f"sealcheck: error: {message}\n")


def _cmd_setup(args: argparse.Namespace) -> int:
    from sealcheck.infra.jars import POM, setup_jars
    from sealcheck.infra.paths import scripts_dir

    start = time.monotonic()
    print(f"jars: Maven project {POM}")
    try:
        copied = setup_jars(quiet=not args.verbose)
    except RuntimeError as exc:  # no Maven, or it could not resolve: say so, no traceback
        print(f"sealcheck setup: {exc}", file=sys.stderr)
        return EXIT_CRASH
    for module, path in copied.items():
        print(f"jars: {module} -> {path}")
    print(f"jars ready in {time.monotonic() - start:.1f}s")
    fuse_script = scripts_dir() / "fuse.sh"
    print(f"fuse: {fuse_script}", flush=True)
    fuse = subprocess.run(["bash", str(fuse_script)], check=False)
    if fuse.returncode != 0:  # the script said why; only the lost-writes nemesis needs it
        print("fuse: not available; runs with the lost-writes nemesis will be refused")
    if args.images:
        from sealcheck.infra.containers.images import base_image, kafka_image, postgres_image
        from sealcheck.systems import SYSTEMS

        start = time.monotonic()
        builders = [base_image, kafka_image, postgres_image]
        builders += [b for make in SYSTEMS.values() for b in make().images()]
        for build in builders:
            print(f"image: {build()}")
        print(f"images ready in {time.monotonic() - start:.1f}s")
    return EXIT_VALID


def _cmd_demo(args: argparse.Namespace) -> int:
    from sealcheck.harness.cli.demo import run_demo

    result = run_demo(args.records, args.partitions, args.seed, args.backend)
    for name, seconds in result.timings.items():
        print(f"{name:>16}: {seconds:6.2f}")
    verdict = "valid" if result.ok else "INVALID"
    print(f"demo {verdict}: produced {result.produced}, read back {result.read_back}")
    return EXIT_VALID if result.ok else EXIT_INVALID


def _cmd_check(args: argparse.Namespace) -> int:
    from sealcheck.checkers.registry import CHECKERS, unknown_checkers
    from sealcheck.rundir.names import EXPORT_DIR, OLD_EXPORT_DIR

    unknown = unknown_checkers(args.checker or [])
    if unknown:
        print(
            f"sealcheck: unknown checker {unknown[0]!r}; known: {', '.join(CHECKERS)}",
            file=sys.stderr,
        )
        return EXIT_BAD_ARGS
    run_dir = Path(args.run_dir)
    markers = ("history.jsonl", "test.json", "topic.parquet", EXPORT_DIR, OLD_EXPORT_DIR)
    if not run_dir.is_dir() or not any((run_dir / m).exists() for m in markers):
        print(
            f"sealcheck: {run_dir} is not a run directory (no {', '.join(markers[:-1])}); give "
            "runs/<test>/<time>/ or runs/latest",
            file=sys.stderr,
        )
        return EXIT_BAD_ARGS
    chosen = list(dict.fromkeys(args.checker or []))
    if chosen and set(chosen) != set(CHECKERS):
        return _partial_check(run_dir, chosen)
    return _full_check(run_dir)


def _full_check(run_dir: Path) -> int:
    """Judge the run with every checker; the run's verdict (``results.json``,
    ``report.html``)
    says UNKNOWN, being re-judged, until the judgement is complete."""
    import polars as pl

    from sealcheck.checkers import check_run
    from sealcheck.checkers.result import verdict_text
    from sealcheck.harness.run.runner import marks_of, results_doc
    from sealcheck.report.headline import judged_text
    from sealcheck.report.report import write_report
    from sealcheck.rundir.archive import mark_rejudging, write_json, write_plain_report

    try:
        mark_rejudging(run_dir)  # a check that dies from here on never leaves an older VALID
    except OSError as exc:
        print(
            f"sealcheck: cannot replace {run_dir / 'results.json'} ({exc.strerror or exc}): "
            "make the run directory writable, then check again",
            file=sys.stderr,
        )
        return EXIT_BAD_ARGS
    result = check_run(run_dir)
    doc = results_doc(run_dir, result.to_json())
    write_json(run_dir / "results.json", doc)
    try:
        # never leave a report saying an older verdict
        report = write_report(run_dir, marks_of(run_dir))
    except (OSError, ValueError, pl.exceptions.PolarsError) as exc:  # inputs it cannot draw
        why = f"the full report could not be drawn ({type(exc).__name__}: {exc})"
        word = verdict_text(result.valid).upper()
        report = write_plain_report(run_dir, word, [_verdict_line(result.valid, doc), why])
    _print_result(result)
    print(f"verdict: {_verdict_line(result.valid, doc)}  ({run_dir / 'results.json'})")
    for line in judged_text(doc):
        print(line)
    print(f"report: {report}")
    return VERDICT_EXIT[result.valid]


def _partial_check(run_dir: Path, chosen: list[str]) -> int:
    """Run some checkers only: their result goes to ``partial-check.json`` and the terminal;
    the run's verdict (``results.json``, ``report.html``) is left as it is."""
    from sealcheck.checkers import check_run
    from sealcheck.checkers.registry import CHECKERS
    from sealcheck.rundir.archive import PARTIAL, write_json

    what = f"{', '.join(chosen)} ({len(chosen)} of {len(CHECKERS)} checkers)"
    print(f"partial check of {what}: not the run's verdict (results.json, report.html unchanged)")
    result = check_run(run_dir, chosen)
    doc = result.to_json()
    note = (
        f"a check of {what} by `sealcheck check --checker`: not the run's verdict, which is "
        "results.json; `sealcheck check RUN` without --checker re-judges the run"
    )
    partial = {"checkers_run": chosen}  # those not run: the document's own ``not_run``
    write_json(run_dir / PARTIAL, {**doc, "partial": {**partial, "note": note}})
    _print_result(result)
    print(f"partial result: {_verdict_line(result.valid, doc)}  ({run_dir / PARTIAL})")
    print(f"the run's verdict is unchanged in {run_dir / 'results.json'} (not this check's)")
    return VERDICT_EXIT[result.valid]


def _print_result(result: RunResult) -> None:
    """The input problems first (the cause), then each checker, then the notes."""
    for problem in result.input_problems:
        print(f"  input problem: {problem}")
    for name, r in result.checkers.items():
        kinds = ", ".join(f"{k} x{n}" for k, n in sorted(r.anomaly_counts.items()))
        extra = f" ({kinds})" if kinds else (f" ({r.error})" if r.error else "")
        print(f"{name:>15}: {r.word()}{extra}")
    for note in result.notes:
        print(f"  note: {note}")


def _verdict_line(valid: bool | None, doc: dict[str, Any]) -> str:
    """``valid`` / ``invalid`` / ``unknown: <the reason>``."""
    from sealcheck.checkers.result import verdict_text
    from sealcheck.rundir.archive import verdict_reason

    reason = verdict_reason(doc) if valid is None else None
    na = doc.get("not_applicable") or []  # checkers left out of the verdict: nothing to judge
    return (
        verdict_text(valid)
        + (f": {reason}" if reason else "")
        + (f" (not applicable: {', '.join(na)})" if na else "")
    )


def _upsert_source(command: list[str], argv: list[str]) -> int:
    """``sealcheck upsert-source`` (old name ``sealcheck pipeline``): the upsert source
    (``sealcheck_upsert_source``, the system under test ``--system upsert-source``) run by hand,
    with the connector jars ``sealcheck setup`` copied into the user's cache unless ``--jars`` or
    ``SEALCHECK_SPARK_JARS`` say others."""
    import os

    from sealcheck_upsert_source.cli import main as pipeline_main
    from sealcheck_upsert_source.spark import JARS_ENV

    if JARS_ENV not in os.environ and not any(a.startswith("--jars") for a in argv):
        from sealcheck.infra.jars import JarsMissingError, spark_connector_jars

        try:
            os.environ[JARS_ENV] = ":".join(str(p) for p in spark_connector_jars())
        except JarsMissingError as exc:
            print(f"sealcheck {command[0]}: {exc}", file=sys.stderr)
            return EXIT_BAD_ARGS
    return pipeline_main(argv)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("sealcheck")
    except PackageNotFoundError:
        return "unknown (not installed; run `make setup`)"


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for tests and documentation)."""
    parser = _Parser(
        prog="sealcheck",
        description="Jepsen-style fault injection for Kafka -> Spark upsert jobs: run a seeded "
        "chaos test, judge it, and keep it with a report.",
    )
    parser.add_argument("--version", action="version", version=f"sealcheck {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    setup = sub.add_parser(
        "setup",
        help="copy the JVM jars from Maven Central into the user's cache ($SEALCHECK_CACHE, "
        "else $XDG_CACHE_HOME/sealcheck or ~/.cache/sealcheck; idempotent)",
    )
    setup.add_argument("--images", action="store_true", help="also build the container images")
    setup.add_argument("--verbose", action="store_true", help="show Maven's output")
    setup.set_defaults(func=_cmd_setup)

    demo = sub.add_parser("demo", help="smoke round trip: Kafka -> Spark batch read")
    demo.add_argument("--records", type=positive, default=10_000)
    demo.add_argument("--partitions", type=positive, default=3)
    demo.add_argument("--seed", type=int, default=1)
    demo.add_argument("--backend", choices=("local", "containers"), default="local")
    demo.set_defaults(func=_cmd_demo)

    check = sub.add_parser(
        "check",
        help="judge a stored run offline (writes results.json; with --checker, only "
        "partial-check.json)",
    )
    check.add_argument("run_dir", help="a run directory: topic.parquet, export/, history.jsonl")
    check.add_argument(
        "--checker",
        action="append",
        help="run only this checker (repeatable): a partial check, printed and written to "
        "partial-check.json, never the run's verdict",
        default=None,
    )
    check.set_defaults(func=_cmd_check)

    from sealcheck.harness.cli.run import add_commands

    add_commands(sub)

    from sealcheck.harness.campaigns.selftest import add_command

    add_command(sub)

    from sealcheck.harness.campaigns import shrink, suite

    shrink.add_command(sub)
    suite.add_command(sub)

    sub.add_parser(
        "upsert-source",
        add_help=False,
        help="run the upsert source (the system under test `--system upsert-source`) by hand; "
        "its own flags: `sealcheck upsert-source --help` (old name: `sealcheck pipeline`)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``sealcheck`` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] in (["upsert-source"], ["pipeline"]):
        return _upsert_source(argv[:1], argv[1:])
    args = build_parser().parse_args(argv)
    on_sigterm()  # torn down as for Ctrl-C, not cut short (a paused JVM would outlive it)
    try:
        code: int = args.func(args)
    except Terminated:
        print("sealcheck: terminated (SIGTERM)", file=sys.stderr)
        return EXIT_TERMINATED
    except KeyboardInterrupt:
        print("sealcheck: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:
        from sealcheck.infra.containers.images import EngineUnavailableError
        from sealcheck.infra.jars import JarsMissingError

        if isinstance(exc, JarsMissingError | EngineUnavailableError):
            print(f"sealcheck: {exc}", file=sys.stderr)
            return EXIT_BAD_ARGS
        traceback.print_exc()
        print(f"sealcheck: the harness itself failed: {exc}", file=sys.stderr)
        return EXIT_CRASH
    return code


if __name__ == "__main__":
    sys.exit(main())
