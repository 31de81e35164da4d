"""What ``sealcheck run --leave-running`` leaves behind, on purpose: the record it writes in the
run directory (``left-running.json``), read back by ``sealcheck cleanup`` to end it.

The record names how to reach what is left — Kafka's bootstrap and topic, the store (and its
database file), the last incarnation's pid and log — and every process and lazy mount left,
each process by ``pid`` and start time (a pid reused by another process is never signalled).
A run directory holding the record is *left running*: :mod:`sealcheck.infra.cleanup` does not treat
its
processes and mounts as leftovers of a dead harness, until ``sealcheck cleanup`` ends them and
renames the record ``left-running.ended.json``.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: The record's file name in the run directory, and its name once ended.
LEFT_RUNNING = "left-running.json"
ENDED = "left-running.ended.json"
#: The command that ends the left-running runs of an archive (:func:`cleanup_command`).
CLEANUP_COMMAND = "sealcheck cleanup"


def cleanup_command(run_dir: str | Path) -> str:
    """The command that ends the run left running in ``run_dir``
    (``<archive>/<test>/<time>``): ``sealcheck cleanup --runs <archive>`` (a cleanup ends
    only its own archive's runs)."""
    return f"{CLEANUP_COMMAND} --runs {shlex.quote(str(Path(run_dir).parent.parent))}"


class LeftRunningError(ValueError):
    """A record cannot be read; the message names the file, the field and its value."""


@dataclass(frozen=True)
class LeftProcess:
    """One process left running: ``role`` is ``kafka-1``, ``sut-7`` (the incarnation),
    ``lazyfs``, ``service`` (e.g. the Spark Connect server) or ``keeper``
    (:mod:`sealcheck.infra.keeper`,
    the others' owner); ``log`` is where its output goes ("" when unknown)."""

    pid: int
    start: str
    role: str
    command: str
    log: str = ""

    @property
    def token(self) -> str:
        """``<pid>:<start time>``, as :func:`sealcheck.infra.procs.owner_token` writes it."""
        return f"{self.pid}:{self.start}"


@dataclass(frozen=True)
class LeftRunning:
    """The record of one run left running (``left-running.json``)."""

    run_dir: str
    owner: str  # the owner its processes carry: the run's keeper (sealcheck.infra.keeper)
    system: str
    bootstrap: str
    topic: str
    store: str  # the store's directory
    database: str | None  # the store's database file, when it is one file
    incarnation: str  # its name, e.g. sut-7
    pid: int
    log: str
    exit_code: int | None  # None: running when the harness left; else it exited at start
    processes: tuple[LeftProcess, ...] = ()
    mounts: tuple[str, ...] = ()
    logs: tuple[tuple[str, str], ...] = ()  # (live log, copy in the run's logs/) at the end
    left_at: str = ""

    def to_json(self) -> dict[str, Any]:
        """The record as written to ``left-running.json``."""
        return {
            "run_dir": self.run_dir,
            "owner": self.owner,
            "system": self.system,
            "kafka": {"bootstrap": self.bootstrap, "topic": self.topic},
            "store": {"path": self.store, "database": self.database},
            "incarnation": {
                "name": self.incarnation,
                "pid": self.pid,
                "log": self.log,
                "exit_code": self.exit_code,
            },
            "processes": [
                {"pid": p.pid, "start": p.start, "role": p.role, "command": p.command, "log": p.log}
                for p in self.processes
            ],
            "mounts": list(self.mounts),
            "logs": [list(pair) for pair in self.logs],
            "left_at": self.left_at,
            "cleanup": cleanup_command(self.run_dir),
        }

    @classmethod
    def from_json(cls, doc: Any, where: str = LEFT_RUNNING) -> LeftRunning:
        """A record from :meth:`to_json`'s shape; :class:`LeftRunningError` names the first
        field that is missing or of the wrong type."""

        def get(table: Any, key: str, kind: type | tuple[type, ...], path: str) -> Any:
            if not isinstance(table, dict) or key not in table:
                raise LeftRunningError(f"{where}: {path} is missing; rewrite it or delete it")
            value = table[key]
            if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
                raise LeftRunningError(
                    f"{where}: {path}={value!r} is not {_kind_name(kind)}; rewrite it or delete it"
                )
            return value

        if not isinstance(doc, dict):
            raise LeftRunningError(f"{where}: {doc!r:.80} is not a JSON object; delete it")
        kafka = get(doc, "kafka", dict, "kafka")
        store = get(doc, "store", dict, "store")
        inc = get(doc, "incarnation", dict, "incarnation")
        processes = []
        for i, p in enumerate(get(doc, "processes", list, "processes")):
            at = f"processes[{i}]"
            processes.append(
                LeftProcess(
                    pid=get(p, "pid", int, f"{at}.pid"),
                    start=get(p, "start", str, f"{at}.start"),
                    role=get(p, "role", str, f"{at}.role"),
                    command=get(p, "command", str, f"{at}.command"),
                    log=p["log"] if isinstance(p.get("log"), str) else "",
                )
            )
        mounts = get(doc, "mounts", list, "mounts")
        if not all(isinstance(m, str) for m in mounts):
            raise LeftRunningError(f"{where}: mounts={mounts!r} is not a list of paths")
        logs = get(doc, "logs", list, "logs")
        if not all(
            isinstance(pair, list) and len(pair) == 2 and all(isinstance(x, str) for x in pair)
            for pair in logs
        ):
            raise LeftRunningError(f"{where}: logs={logs!r} is not a list of [from, to] paths")
        return cls(
            run_dir=get(doc, "run_dir", str, "run_dir"),
            owner=get(doc, "owner", str, "owner"),
            system=get(doc, "system", str, "system"),
            bootstrap=get(kafka, "bootstrap", str, "kafka.bootstrap"),
            topic=get(kafka, "topic", str, "kafka.topic"),
            store=get(store, "path", str, "store.path"),
            database=get(store, "database", (str, type(None)), "store.database"),
            incarnation=get(inc, "name", str, "incarnation.name"),
            pid=get(inc, "pid", int, "incarnation.pid"),
            log=get(inc, "log", str, "incarnation.log"),
            exit_code=get(inc, "exit_code", (int, type(None)), "incarnation.exit_code"),
            processes=tuple(processes),
            mounts=tuple(mounts),
            logs=tuple((a, b) for a, b in logs),
            left_at=str(doc.get("left_at", "")),
        )

    def lines(self) -> list[str]:
        """What ``sealcheck run --leave-running`` prints: how to reach each part, and how to
        end them."""
        brokers = [p for p in self.processes if p.role.startswith("kafka-")]
        others = [p for p in self.processes if p.role in ("service", "lazyfs", "keeper")]
        if self.exit_code is None:
            inc = f"{self.incarnation}, pid {self.pid}, log {self.log}"
        else:
            inc = (
                f"{self.incarnation} exited with code {self.exit_code} as it started (see its "
                f"log {self.log}); Kafka and the store are left running"
            )
        out = [
            f"left running until `{cleanup_command(self.run_dir)}` ends them:",
            f"  kafka:       bootstrap {self.bootstrap}  topic {self.topic}"
            + "".join(f"  ({p.role} pid {p.pid}, log {p.log or '?'})" for p in brokers),
            f"  store:       {self.store}",
        ]
        if self.database:
            out.append(f"  database:    {self.database}")
        out.append(f"  {self.system + ':':<12} {inc}")
        out += [
            f"  {p.role + ':':<12} pid {p.pid}, " + (f"log {p.log}" if p.log else p.command[:90])
            for p in others
        ]
        out += [f"  mount:       {m}" for m in self.mounts]
        out += [
            f"  recorded in: {Path(self.run_dir) / LEFT_RUNNING}",
            f"  end them:    {cleanup_command(self.run_dir)}",
        ]
        return out


def _kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    names = {int: "a whole number", str: "text", dict: "a table", list: "a list"}
    return " or ".join(names.get(k, "null") for k in kinds)


def read(path: Path) -> LeftRunning:
    """The record at ``path``; :class:`LeftRunningError` when it is missing or malformed."""
    import json

    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        raise LeftRunningError(f"{path} does not exist") from None
    except (OSError, ValueError) as exc:
        raise LeftRunningError(f"{path} cannot be read as JSON ({exc}); delete it") from None
    return LeftRunning.from_json(doc, str(path))


def left_running_root(path: Path) -> Path | None:
    """The left-running run directory ``path`` is (or lies in), if any: the nearest of it and
    its parents that holds a ``left-running.json``."""
    for where in (path, *path.parents):
        try:
            if (where / LEFT_RUNNING).is_file():
                return where
        except OSError:  # a dead FUSE mount (ENOTCONN) holds nothing we can read: go up
            continue
    return None


def describe_store(store: str) -> tuple[str, str | None]:
    """``(directory, database file)`` of a system's store as its deployment names it: a
    directory is the store itself; a file (e.g. a SQLite database) is the database, in its
    directory; a DSN (``postgresql://…``) is the database alone."""
    if "://" in store:
        return "", store
    path = Path(store).absolute()
    if path.is_dir():
        return str(path), None
    return str(path.parent), str(path)
