"""``sealcheck run | serve | cleanup``: the chaos test, the run browser, and leftover removal."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

VERDICT_EXIT = {True: 0, False: 1, None: 2}


def _nemesis_list(text: str) -> tuple[str, ...]:
    return tuple(n for n in text.split(",") if n and n != "none")


def add_commands(sub: Any) -> None:
    """Register ``run``, ``serve`` and ``cleanup`` on the top-level subparsers."""
    run = sub.add_parser(
        "run",
        help="run a chaos test (real Kafka, the real pipeline, faults) and judge it",
        description="Run a Jepsen-style test; exit 0 valid, 1 invalid, 2 unknown, "
        "254 bad arguments, 255 the harness crashed. Flags override --config.",
    )
    run.add_argument("--config", type=Path, help="a TOML test config (flags override it)")
    run.add_argument(
        "--replay",
        type=Path,
        metavar="RUN_DIR",
        help="repeat a stored run: its config and its saved fault schedule",
    )
    run.add_argument("--name", help="test name (the store directory)")
    run.add_argument("--seed", type=int, help="the seed of the workload and the schedule")
    run.add_argument("--duration", type=float, dest="duration_s", help="seconds of faults")
    run.add_argument(
        "--nemesis",
        type=_nemesis_list,
        dest="nemeses",
        help="comma-separated nemeses (kill,failpoint,pause,kill-kafka,pause-kafka; with --backend "
        "containers also partition,kill-postgres) or none",
    )
    run.add_argument(
        "--interval", type=float, dest="nemesis_interval_s", help="seconds per fault window"
    )
    run.add_argument("--brokers", type=int, help="1 or 3 Kafka brokers")
    run.add_argument(
        "--backend", help="local (processes, the default) or containers (Docker, PostgreSQL)"
    )
    run.add_argument("--partitions", type=int)
    run.add_argument("--rate", type=float, dest="workload.rate", help="records per second")
    run.add_argument("--keys", type=int, dest="workload.keys")
    run.add_argument("--distribution", dest="workload.distribution", help="uniform or zipf")
    run.add_argument("--concurrency", type=int, dest="workload.concurrency")
    run.add_argument("--final-timeout", type=float, dest="final_timeout_s")
    run.add_argument("--broken", help="run the pipeline with a deliberate bug (testing)")
    run.add_argument("--store", dest="store_dir", help="where runs are stored (default store/)")
    run.add_argument("--no-progress", action="store_true", help="no live display")
    run.set_defaults(func=cmd_run)

    serve = sub.add_parser("serve", help="browse stored runs and their reports")
    serve.add_argument("--store", type=Path, default=Path("store"))
    serve.add_argument("--port", type=int, default=8080)
    serve.set_defaults(func=cmd_serve)

    clean = sub.add_parser("cleanup", help="remove processes left by runs whose harness died")
    clean.set_defaults(func=cmd_cleanup)


def cmd_run(args: argparse.Namespace) -> int:
    """Run a test and print its verdict and report path."""
    from harness.config import ConfigError, from_json, load_config
    from harness.progress import Display
    from harness.runner import run_test
    from nemeses import NEMESES, Action
    from pipeline.loop import BROKEN_MODES

    overrides = {
        k: v
        for k, v in vars(args).items()
        if k not in ("config", "replay", "no_progress", "func", "command")
    }
    schedule = None
    try:
        if args.replay is not None:
            meta = json.loads((args.replay / "test.json").read_text())
            cfg = from_json(meta["config"])
            schedule = [Action.from_json(a) for a in meta["schedule"]]
        else:
            cfg = load_config(args.config, overrides, tuple(NEMESES), tuple(BROKEN_MODES))
    except ConfigError as exc:
        print(f"sealcheck run: {exc}", file=sys.stderr)
        return 254
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"sealcheck run: cannot replay {args.replay}: {exc}", file=sys.stderr)
        return 254
    with Display(live=not args.no_progress) as display:
        display.status.duration_s = cfg.duration_s
        outcome = run_test(cfg, display, schedule)
    words = {True: "VALID", False: "INVALID", None: "UNKNOWN"}
    if outcome.reason:
        print(f"final phase: {outcome.reason}")
    print(f"verdict: {words[outcome.valid]}  (took {outcome.took_s:.0f}s)")
    print(f"report: {outcome.run_dir / 'report.html'}")
    return VERDICT_EXIT[outcome.valid]


def cmd_serve(args: argparse.Namespace) -> int:
    """Serve the store until Ctrl-C."""
    from harness.serve import make_server

    server = make_server(args.store, args.port)
    port = server.server_address[1]
    print(f"serving {args.store} at http://127.0.0.1:{port}/ (Ctrl-C to stop)")
    try:
        server.serve_forever()
    finally:
        server.server_close()
    return 0


def cmd_cleanup(args: argparse.Namespace) -> int:
    """Kill leftover processes of dead runs; list what was removed."""
    from harness.cleanup import cleanup, cleanup_containers

    gone = cleanup()
    for item in gone:
        print(f"killed pid {item.pid} of run {item.run}: {item.command}")
    boxes = cleanup_containers()
    for what in boxes:
        print(f"removed {what}")
    print(f"cleanup: {len(gone)} leftover processes, {len(boxes)} containers/networks removed")
    return 0
