"""``sealcheck upsert-source``: run the persistent Kafka upsert source as a process.

Exit codes: 0 stopped on request (SIGTERM/SIGINT or ``--max-steps``), 1 crashed,
3 fenced by another writer, 4 the store cannot be resumed (inconsistent or an invariant
violated), 254 bad arguments. Each sealed step is logged as one JSON line on stdout.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Sequence
from types import FrameType
from typing import NoReturn

from sealcheck_upsert_source.broken import BROKEN_MODES, durable_commits
from sealcheck_upsert_source.failpoints import FailpointSpecError, load_from_env

EXIT_OK = 0
EXIT_CRASH = 1
EXIT_FENCED = 3
EXIT_STORE = 4
EXIT_BAD_ARGS = 254


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_BAD_ARGS, f"sealcheck upsert-source: error: {message}\n")


def _at_least(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value} must be at least {minimum}")
        return value

    return parse


def build_parser() -> argparse.ArgumentParser:
    """Arguments of ``sealcheck upsert-source``."""
    p = _Parser(
        prog="sealcheck upsert-source", description="persistent Kafka upsert source on Spark"
    )
    p.add_argument("--bootstrap", required=True, help="Kafka bootstrap servers, host:port[,…]")
    p.add_argument("--topic", required=True, help="the upsert topic to read")
    p.add_argument("--store", required=True, help="persist store: a path or sqlite:///path")
    p.add_argument("--max-records-per-step", type=_at_least(1), default=10_000)
    p.add_argument("--max-steps", type=_at_least(1), default=None, help="stop after N steps")
    p.add_argument(
        "--retain-steps", type=_at_least(0), default=0, help="compact history older than N steps"
    )
    p.add_argument("--compact-every", type=_at_least(1), default=10)
    p.add_argument(
        "--hold-steps",
        type=_at_least(0),
        default=0,
        help="keep up to N steps for readers' read holds (0: ignore holds)",
    )
    p.add_argument(
        "--jars",
        default=None,
        help="the Spark Kafka connector's jars or their directory (default: $SEALCHECK_SPARK_JARS)",
    )
    p.add_argument(
        "--spark-remote",
        default=None,
        help="a Spark Connect server (sc://host:port) instead of local mode in this process "
        "(default: $SEALCHECK_SPARK_REMOTE, else local mode)",
    )
    p.add_argument("--spark-cores", type=_at_least(1), default=2)
    p.add_argument("--driver-memory", default="1g")
    p.add_argument(
        "--broken",
        choices=sorted(BROKEN_MODES),
        default=None,
        help="run with a deliberate bug (to see the checkers catch it): "
        + "; ".join(f"{k}: {v}" for k, v in BROKEN_MODES.items()),
    )
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run the pipeline until stopped; return the exit code."""
    args = build_parser().parse_args(argv)
    try:
        load_from_env()
    except FailpointSpecError as exc:
        print(f"sealcheck upsert-source: {exc}", file=sys.stderr)
        return EXIT_BAD_ARGS
    from sealcheck_upsert_source.broken import make_loop
    from sealcheck_upsert_source.loop import Fenced, LoopConfig, StoreInconsistent, log_json
    from sealcheck_upsert_source.persist import InvariantViolation, open_store
    from sealcheck_upsert_source.spark import REMOTE_ENV, JarsNotGivenError, connector_jars

    remote = args.spark_remote or os.environ.get(REMOTE_ENV) or None
    jars: list[str] = []
    try:
        if remote is None:  # local mode needs the connector here; a server has its own
            jars = connector_jars(args.jars)
    except JarsNotGivenError as exc:
        print(f"sealcheck upsert-source: {exc}", file=sys.stderr)
        return EXIT_BAD_ARGS

    try:
        store = open_store(args.store, durable=durable_commits(args.broken))
    except ValueError as exc:
        print(f"sealcheck upsert-source: {exc}", file=sys.stderr)
        return EXIT_BAD_ARGS
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        del frame
        log_json({"event": "stopping", "signal": signum})
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    config = LoopConfig(
        max_records_per_step=args.max_records_per_step,
        retain_steps=args.retain_steps,
        compact_every=args.compact_every,
        hold_steps=args.hold_steps,
        broken=args.broken,
    )
    code = EXIT_CRASH
    source = None
    try:
        from sealcheck_upsert_source.source import KafkaSparkSource
        from sealcheck_upsert_source.spark import remote_session, spark_session

        if remote is not None:
            spark = remote_session(remote)
        else:
            spark = spark_session(
                jars, "sealcheck-upsert-source", args.spark_cores, args.driver_memory
            )
        source = KafkaSparkSource(args.bootstrap, args.topic, spark)
        loop = make_loop(store, source, config, log_json)
        loop.rehydrate()
        log_json({"event": "started", "t": loop.t, "topic": args.topic})
        sealed = loop.run(stop, args.max_steps)
        log_json({"event": "stopped", "t": loop.t, "sealed": sealed})
        code = EXIT_OK
    except Fenced as exc:
        log_json({"event": "fenced", "error": str(exc)})
        code = EXIT_FENCED
    except (StoreInconsistent, InvariantViolation) as exc:
        log_json({"event": "store_error", "error": str(exc)})
        print(f"sealcheck upsert-source: {exc}", file=sys.stderr)
        code = EXIT_STORE
    except Exception as exc:
        traceback.print_exc()
        log_json({"event": "crashed", "error": f"{type(exc).__name__}: {exc}"[:500]})
    finally:
        if source is not None:
            source.close()
        store.close()
    return code


if __name__ == "__main__":
    sys.exit(main())
