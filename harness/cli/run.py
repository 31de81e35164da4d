"""``sealcheck run | serve | cleanup``: the chaos test, the run browser, and leftover removal."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sealcheck.harness.campaigns.commands import EXIT_BAD_ARGS, VERDICT_EXIT, exit_help
from sealcheck.nemeses.registry import NEMESES
from sealcheck.rundir.names import RUNS_DIR

if TYPE_CHECKING:
    from sealcheck.harness.run.config import TestConfig
    from sealcheck.harness.run.test import Test


def _name_list(text: str) -> tuple[str, ...]:
    return tuple(n for n in text.split(",") if n and n != "none")


_HELP = {
    "name": "test name (its folder in the archive of runs)",
    "seed": "the seed of the workload and the schedule",
    "backend": "local (processes, the default) or containers (Docker, PostgreSQL)",
    "brokers": "1 or 3 Kafka brokers",
    "duration_s": "seconds of faults",
    "nemeses": "comma-separated nemeses, a name twice for two shares of the windows, or none "
    "(default: the mix in docs/runs.md, less what the backend cannot host): " + ",".join(NEMESES),
    "nemesis_interval_s": "seconds per fault window",
    "final_timeout_s": "seconds allowed to catch up after healing",
    "broken": "run the system under test with a deliberate bug or a variant people write "
    "(an unknown name lists the known ones)",
    "runs_dir": "the archive of runs, where this run is stored (default runs/)",
    "system": "the system under test: a built-in name (upsert-source, delta-streaming, "
    "delta-streaming-tables), a name "
    "an installed package registers (entry points sealcheck.systems) or package.module:Factory "
    "(default upsert-source)",
    "spark": "connect (one Spark Connect server per run, the default), local (a driver in "
    "every incarnation) or cluster (that server drives a Spark standalone cluster: a master and "
    "two workers; nemeses kill-spark-worker, kill-executor, pause-spark-worker)",
    "checkers": "comma-separated checkers that judge the run (default: every one)",
    "workload.rate": "records per second",
    "workload.distribution": "uniform or zipf",
    "leave_running": "after the verdict and the report, keep Kafka, the store and a last "
    "incarnation of the system under test running (local backend) and print how to reach "
    "them; `sealcheck cleanup --runs DIR` (the same archive) ends them",
}
#: Flags that may be given with --replay: they change where the run goes or how it ends, not
#: what it is.
_REPLAY_OK = ("runs_dir", "leave_running")


def _add_setting_flags(run: Any) -> None:
    """One flag per entry of :data:`sealcheck.harness.run.flags.FLAGS`, typed like the setting,
    and one
    without a value per entry of :data:`sealcheck.harness.run.config.HARNESS_FLAGS`."""
    from sealcheck.harness.run.config import HARNESS_FLAGS, TestConfig
    from sealcheck.harness.run.flags import FLAGS, settings

    defaults = dict(settings(TestConfig()))
    for name, flag in FLAGS.items():
        default = defaults[name]
        kind: Any = str
        if isinstance(default, list | tuple):
            kind = _name_list
        elif isinstance(default, float):
            kind = float
        elif isinstance(default, int):
            kind = int
        run.add_argument(flag, dest=name, type=kind, help=_HELP.get(name))
    _renamed(run, "--store", "--runs")
    for name, flag in HARNESS_FLAGS.items():  # None unless given, like the others
        run.add_argument(flag, dest=name, action="store_const", const=True, help=_HELP.get(name))


class _Renamed(argparse.Action):
    """A flag that was renamed: giving it stops with one line naming the new one."""

    def __init__(self, option_strings: list[str], dest: str, new: str = "", **_: Any) -> None:
        super().__init__(
            option_strings, dest, nargs="?", default=argparse.SUPPRESS, help=argparse.SUPPRESS
        )
        self.new = new

    def __call__(
        self, parser: Any, namespace: Any, values: Any, option_string: str | None = None
    ) -> None:
        """Stop: the old flag is not read any more."""
        parser.exit(
            EXIT_BAD_ARGS,
            f"sealcheck: {option_string} is now {self.new} (the archive of runs): give "
            f"{self.new} {values or 'DIR'}\n",
        )


def _renamed(parser: Any, old: str, new: str) -> None:
    """Refuse ``old``, saying to use ``new`` instead."""
    parser.add_argument(old, action=_Renamed, new=new)


def add_commands(sub: Any) -> None:
    """Register ``run``, ``serve`` and ``cleanup`` on the top-level subparsers."""
    run = sub.add_parser(
        "run",
        help="run a chaos test (real Kafka, the real system under test, faults) and judge it",
        description=f"Run a Jepsen-style test; exit {exit_help()}. Flags override --config.",
    )
    run.add_argument("--config", type=Path, help="a TOML test config (flags override it)")
    run.add_argument(
        "--replay",
        type=Path,
        metavar="RUN_DIR",
        help="repeat a stored run exactly: its saved config and fault schedule (only --runs, "
        "--leave-running and --no-progress may be given with it)",
    )
    _add_setting_flags(run)
    run.add_argument(
        "--set",
        action="append",
        dest="settings",
        metavar="NAME=VALUE",
        default=None,
        help="any setting, e.g. --set workload.zipf_s=1.2 or --set "
        "system_options.retain_steps=0 (a TOML value)",
    )
    run.add_argument("--no-progress", action="store_true", help="no live display")
    run.set_defaults(func=cmd_run)

    serve = sub.add_parser("serve", help="browse stored runs and their reports")
    serve.add_argument(
        "--runs",
        dest="runs_dir",
        type=Path,
        default=Path(RUNS_DIR),
        help="the archive of runs to browse (default runs/)",
    )
    _renamed(serve, "--store", "--runs")
    serve.add_argument("--port", type=int, default=8080, help="0 picks a free port")
    serve.set_defaults(func=cmd_serve)

    clean = sub.add_parser(
        "cleanup",
        help="end the runs of an archive left running (--leave-running) and remove what its "
        "runs whose harness died left behind (processes, lazy mounts, containers)",
        description="End the runs of one archive of runs (--runs, default runs/) left running "
        "and remove what its runs whose harness died left behind; what other archives' runs "
        "left is named and left alone (--all takes every archive on this machine). "
        "Idempotent; goes on past errors.",
    )
    where = clean.add_mutually_exclusive_group()
    where.add_argument(
        "--runs",
        dest="runs_dir",
        type=Path,
        default=Path(RUNS_DIR),
        help="the archive of runs to clean up (default runs/): only its runs' leftovers and "
        "left-running runs",
    )
    where.add_argument(
        "--all",
        dest="every_archive",
        action="store_true",
        help="every archive on this machine, and leftovers that name no run (a test "
        "fixture's containers, an older Sealcheck's); with the left-running runs recorded in "
        "runs/",
    )
    _renamed(clean, "--store", "--runs")
    clean.set_defaults(func=cmd_cleanup)


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The settings given on the command line: flags and ``--set`` (each at most once)."""
    from sealcheck.harness.run.config import HARNESS_FLAGS, ConfigError
    from sealcheck.harness.run.flags import FLAGS, parse_set

    given = [*FLAGS, *HARNESS_FLAGS]
    out = {name: getattr(args, name) for name in given if getattr(args, name) is not None}
    for item in args.settings or []:
        name, value = parse_set(item)
        if name in out:
            flag = {**FLAGS, **HARNESS_FLAGS}.get(name, f"--set {name}")
            raise ConfigError(f"--set {item!r}: {name} is already given ({flag}); give it once")
        out[name] = value
    return out


def _replay(args: argparse.Namespace, overrides: dict[str, Any]) -> tuple[Any, list[Any]]:
    """The saved config (checked like a new one) and schedule of ``--replay RUN_DIR``."""
    import dataclasses

    from sealcheck.harness.run.config import ConfigError, build_config
    from sealcheck.harness.run.flags import FLAGS
    from sealcheck.nemeses import NEMESES, Action

    extra = [FLAGS.get(n, f"--set {n}") for n in overrides if n not in _REPLAY_OK]
    if args.config is not None:
        extra.insert(0, "--config")
    if extra:
        raise ConfigError(
            f"--replay repeats {args.replay} exactly as saved, so {', '.join(extra)} cannot be "
            "given with it (only --runs, --leave-running and --no-progress can); to change "
            "settings, run without --replay"
        )
    meta_path = args.replay / "test.json"
    try:
        meta = json.loads(meta_path.read_text())
    except FileNotFoundError:
        raise ConfigError(
            f"cannot replay {args.replay}: {meta_path} does not exist (give a run directory, "
            "e.g. runs/latest)"
        ) from None
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot replay {args.replay}: {meta_path}: {exc}") from None
    if not isinstance(meta, dict) or "config" not in meta or "schedule" not in meta:
        raise ConfigError(f"cannot replay {args.replay}: {meta_path} has no config or schedule")
    try:
        cfg = build_config(meta["config"], stored=True)
    except ConfigError as exc:
        raise ConfigError(f"cannot replay {args.replay}: saved {exc}") from None
    schedule = []
    for n, doc in enumerate(meta["schedule"] if isinstance(meta["schedule"], list) else [None]):
        try:
            action = Action.from_json(doc)
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(
                f"cannot replay {args.replay}: schedule entry {n} {doc!r} is not an action "
                f"({type(exc).__name__}: {exc})"
            ) from None
        if action.nemesis not in NEMESES or not 0 <= action.at_s <= cfg.duration_s:
            raise ConfigError(
                f"cannot replay {args.replay}: schedule entry {n} names nemesis "
                f"{action.nemesis!r} at {action.at_s}s; known nemeses: {', '.join(NEMESES)}, "
                f"times within 0..{cfg.duration_s:g}s"
            )
        schedule.append(action)
    if "runs_dir" in overrides:
        cfg = dataclasses.replace(cfg, runs_dir=str(overrides["runs_dir"]))
    if overrides.get("leave_running") is not None:
        cfg = build_config({**cfg.to_json(), "leave_running": overrides["leave_running"]})
    return cfg, schedule


def cmd_run(args: argparse.Namespace) -> int:
    """Run a test and print its verdict and report path."""
    from sealcheck.harness.run.config import ConfigError, load_config
    from sealcheck.harness.run.progress import Display
    from sealcheck.harness.run.runner import run_test
    from sealcheck.harness.run.session import DescriptorRefused
    from sealcheck.rundir.judged import VERDICT_WORDS

    schedule = None
    try:
        overrides = _overrides(args)
        if args.replay is not None:
            cfg, schedule = _replay(args, overrides)
        else:
            cfg = load_config(args.config, overrides)
        test = _built(cfg, schedule, args.replay)
    except ConfigError as exc:
        print(f"sealcheck run: {exc}", file=sys.stderr)
        return EXIT_BAD_ARGS
    try:
        with Display(live=not args.no_progress) as display:
            display.status.duration_s = cfg.duration_s
            outcome = run_test(test, display)  # validates the test before anything starts
    except ConfigError as exc:  # parts that do not fit (nothing started), or a descriptor
        # whose method failed with the run's values as it deployed (torn down)
        replayed = args.replay is not None and not isinstance(exc, DescriptorRefused)
        saved = f"cannot replay {args.replay}: saved " if replayed else ""
        print(f"sealcheck run: {saved}{exc}", file=sys.stderr)
        return EXIT_BAD_ARGS
    verdict = f"verdict: {VERDICT_WORDS[outcome.valid]}  (took {outcome.took_s:.0f}s)"
    if outcome.halted:  # the verdict's reason, or beside a violation found before it
        print(f"{verdict}; the run was halted: {outcome.halted}")
    else:
        if outcome.reason:
            print(f"final phase: {outcome.reason}")
        print(verdict)
    for line in _judged(outcome.run_dir):
        print(line)
    for line in _why(outcome.run_dir, outcome.valid):
        print(line)
    print(f"report: {outcome.run_dir / 'report.html'}")
    for line in outcome.left.lines() if outcome.left is not None else ():
        print(line)
    return VERDICT_EXIT[outcome.valid]


def _built(cfg: TestConfig, schedule: list[Any] | None, replay: Path | None) -> Test:
    """The test of ``cfg``, built (a ConfigError when a name it gives names nothing; for
    ``--replay``, one that names the saved run). Whether its parts fit together is checked
    once, by :func:`sealcheck.harness.run.runner.run_test`, before anything starts."""
    from sealcheck.harness.run.config import ConfigError
    from sealcheck.harness.run.test import build_test

    try:
        test = build_test(cfg, schedule)
    except ConfigError as exc:
        if replay is None:
            raise
        raise ConfigError(f"cannot replay {replay}: saved {exc}") from None
    return test


def _judged(run_dir: Path) -> list[str]:
    """What the run's verdict covers, from its results: ``sealed_state``'s "sealed steps
    judged one by one / sealed: data 142/142, errors 142/142", or the states ``prefix`` judged
    and the batches they name (:func:`sealcheck.report.headline.judged_text`; none when the
    results cannot be read)."""
    from sealcheck.report.headline import judged_text

    try:
        doc = json.loads((run_dir / "results.json").read_text())
    except (OSError, ValueError):
        return []
    return judged_text(doc) if isinstance(doc, dict) else []


def _why(run_dir: Path, valid: bool | None) -> list[str]:
    """For a run that is not VALID: what a failing test prints of what failed
    (:meth:`~sealcheck.harness.campaigns.verdicts.ChaosResult.why_lines`, 3 anomalies), and the
    command that repeats it — what a person acts on without opening the report."""
    from sealcheck.harness.campaigns.verdicts import read_result
    from sealcheck.harness.run.runner import replay_command

    if valid is True:
        return []
    return [*read_result(run_dir, 0, 0, "").why_lines(3), f"repeat: {replay_command(run_dir)}"]


def cmd_serve(args: argparse.Namespace) -> int:
    """Serve the archive of runs until Ctrl-C."""
    from sealcheck.report.serve import make_server

    if not args.runs_dir.is_dir():
        print(
            f"sealcheck serve: {args.runs_dir} is not a directory; give the archive of runs "
            "with --runs (default runs/, created by `sealcheck run`)",
            file=sys.stderr,
        )
        return EXIT_BAD_ARGS
    try:
        server = make_server(args.runs_dir, args.port)
    except (OSError, OverflowError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        print(
            f"sealcheck serve: cannot listen on 127.0.0.1:{args.port} ({why}); choose "
            "another port with --port, or --port 0 for a free one",
            file=sys.stderr,
        )
        return EXIT_BAD_ARGS
    port = server.server_address[1]
    print(f"serving {args.runs_dir} at http://127.0.0.1:{port}/ (Ctrl-C to stop)")
    try:
        server.serve_forever()
    finally:
        server.server_close()
    return 0


def cmd_cleanup(args: argparse.Namespace) -> int:
    """End the archive's runs left running, remove what its dead runs left (every archive's
    with ``--all``); list what was removed, and what other archives' runs left. Idempotent,
    and goes on past errors (each is printed)."""
    from sealcheck.infra.cleanup import end_left_running, left_running_runs
    from sealcheck.infra.sweep import counted, left_alone_line, removed_line, shown, sweep

    archive = None if args.every_archive else args.runs_dir
    runs = left_running_runs([args.runs_dir], within=archive)
    ended = [end_left_running(run) for run in runs]
    for run in ended:
        print(f"ended left-running run {run.run_dir}:")
        for what in run.processes:
            print(f"  stopped {what}")
        for where in run.mounts:
            print(f"  unmounted {where}")
        if run.removed:
            print(f"  removed {run.removed}")
        for error in run.errors:
            print(f"  warning: {error}")
    swept = sweep(archive)
    verbs = {"process": "killed", "mount": "unmounted"}
    for item in swept.removed:
        of = "no run" if item.run is None else shown(item.run, archive)
        print(f"{verbs.get(item.kind, 'removed')} {item.kind} {item.what} (of {of})")
    for line in (removed_line(swept), left_alone_line(swept)):
        if line is not None:
            print(line)
    removed = counted(swept.removed) or "nothing else"
    print(
        f"cleanup of {'every archive' if archive is None else archive}: {len(ended)} "
        f"left-running runs ended, {removed} removed"
    )
    return 0
