"""A config spelled on the command line: the flag of each setting (:data:`FLAGS`; the rest
are ``--set name=value``), every setting of a config as flags (:func:`to_flags`: the
reproduce line), and ``--set``'s own syntax (:func:`parse_set`)."""

from __future__ import annotations

import json
import tomllib
from typing import Any

from sealcheck.harness.run.config import ConfigError, TestConfig

#: The command-line flag of each setting (``workload.<name>`` for the workload's); a setting
#: without one is given as ``--set name=value``. The CLI builds its flags from this map and
#: :func:`to_flags` writes every setting with it, so a reproduce line cannot leave one out.
FLAGS: dict[str, str] = {
    "name": "--name",
    "seed": "--seed",
    "system": "--system",
    "backend": "--backend",
    "spark": "--spark",
    "brokers": "--brokers",
    "partitions": "--partitions",
    "duration_s": "--duration",
    "nemeses": "--nemesis",
    "nemesis_interval_s": "--interval",
    "final_timeout_s": "--final-timeout",
    "max_records_per_step": "--max-records-per-step",
    "broken": "--broken",
    "checkers": "--checkers",
    "runs_dir": "--runs",
    "workload.rate": "--rate",
    "workload.keys": "--keys",
    "workload.distribution": "--distribution",
    "workload.concurrency": "--concurrency",
}


def settings(cfg: TestConfig) -> list[tuple[str, Any]]:
    """Every setting of ``cfg`` as ``(name, value)``, workload ones as ``workload.<name>``."""
    doc = cfg.to_json()
    workload, options = doc.pop("workload"), doc.pop("system_options")
    return [
        *doc.items(),
        *((f"workload.{k}", v) for k, v in workload.items()),
        *((f"system_options.{k}", v) for k, v in sorted(options.items())),
    ]


def to_flags(cfg: TestConfig) -> list[str]:
    """Command-line arguments that give exactly ``cfg``: every setting, its flag or
    ``--set name=value`` (a TOML value), so nothing depends on today's defaults."""
    out: list[str] = []
    for name, value in settings(cfg):
        if value is None:
            continue  # the only optional setting (broken) is off
        if name in ("nemeses", "checkers"):
            if name == "checkers" and not value:
                continue  # every checker: the default
            text = ",".join(value) or "none"
        elif isinstance(value, float):
            text = repr(value)
        else:
            text = str(value)
        if name in FLAGS:
            out += [FLAGS[name], text]
        else:
            out += ["--set", f"{name}={toml_literal(value)}"]
    return out


def toml_literal(value: Any) -> str:
    """``value`` (a JSON value) as a TOML value, as ``--set`` reads it (:func:`parse_set`)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, dict):
        return (
            "{" + ", ".join(f"{json.dumps(k)} = {toml_literal(v)}" for k, v in value.items()) + "}"
        )
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_literal(v) for v in value) + "]"
    if value is None:
        raise ConfigError("a null option cannot be given on the command line: leave it out")
    return json.dumps(value) if isinstance(value, str) else str(value)


def parse_set(item: str) -> tuple[str, Any]:
    """``name=value`` of ``--set`` (value: a TOML value; bare words are text)."""
    name, sep, text = item.partition("=")
    name = name.strip()
    if not sep or not name:
        raise ConfigError(
            f"--set {item!r}: expected name=value, e.g. --set workload.zipf_s=1.2 or "
            "--set system_options.retain_steps=0"
        )
    try:
        value = tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        value = text
    return name, value
