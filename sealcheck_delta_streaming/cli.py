"""``python -m sealcheck_delta_streaming --bootstrap HOST:PORT --topic T --dir PATH [...]``:
one incarnation.

Exit codes: 0 stopped on request (SIGTERM/SIGINT), 1 a query failed, 254 bad arguments.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from sealcheck_delta_streaming.failpoints import Failpoints
from sealcheck_delta_streaming.job import JobConfig, run
from sealcheck_delta_streaming.variants import VARIANTS

#: where the harness puts Spark's Kafka connector and Delta's jars (paths or directories)
JARS_ENV = "SEALCHECK_SPARK_JARS"
EXIT_USAGE = 254


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        print(f"sealcheck_delta_streaming: {message}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


def _jars(spec: str) -> list[str]:
    jars: list[str] = []
    for part in filter(None, spec.split(os.pathsep)):
        path = Path(part)
        jars += [str(p) for p in sorted(path.glob("*.jar"))] if path.is_dir() else [part]
    return jars


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the arguments and run the job."""
    p = _Parser(prog="python -m sealcheck_delta_streaming", description=__doc__)
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--topic", required=True)
    p.add_argument("--dir", required=True, type=Path, help="tables and checkpoint live here")
    p.add_argument("--max-offsets-per-trigger", type=int, default=2000)
    p.add_argument("--variant", choices=sorted(VARIANTS), default=None)
    p.add_argument("--app-id", default="sealcheck-delta-streaming")
    p.add_argument("--jars", default=os.environ.get(JARS_ENV, ""))
    p.add_argument(
        "--master",
        default=None,
        help="spark://HOST:PORT of a standalone cluster to submit to (default: local mode)",
    )
    args = p.parse_args(argv)
    if args.max_offsets_per_trigger < 1:
        p.error(f"--max-offsets-per-trigger {args.max_offsets_per_trigger} must be at least 1")
    if args.master is not None and not args.master.startswith("spark://"):
        p.error(f"--master {args.master!r}: give a standalone master as spark://HOST:PORT")
    jars = _jars(args.jars)
    missing = [j for j in jars if not Path(j).is_file()]
    if not jars or missing:
        p.error(
            f"no usable jars ({missing or 'none given'}): pass --jars or set {JARS_ENV} to the "
            "directories of Spark's Kafka connector and Delta (`sealcheck setup` copies them)"
        )
    cfg = JobConfig(
        bootstrap=args.bootstrap,
        topic=args.topic,
        root=args.dir,
        max_offsets_per_trigger=args.max_offsets_per_trigger,
        variant=args.variant,
        app_id=args.app_id,
        jars=tuple(jars),
        master=args.master,
    )
    args.dir.mkdir(parents=True, exist_ok=True)
    return run(cfg, Failpoints())
