"""A :class:`~sealcheck.systems.job.Job` descriptor's own methods — ``output(run)``,
``command(run)``, ``environment(run)`` — called and what they return checked, so that one that
raises or returns what the harness cannot use is one line naming the method, the exception or
the value, and what to return instead (:class:`DescriptorError`), never a traceback from deep in
the run. The harness calls them before the run starts, with placeholder values
(:meth:`sealcheck.systems.job.JobRun.placeholder`), and again with the run's own values
wherever the run needs them (the deployment, each incarnation's launch). Every function takes
the descriptor and the :class:`~sealcheck.systems.job.JobRun` it is called with (typed as
objects: :mod:`sealcheck.systems.job` imports this module, not the other way round).
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from sealcheck.core.said import cut, named, short
from sealcheck.infra.jars import JarsMissingError

if TYPE_CHECKING:
    from sealcheck.systems.outputs import Output

#: what an output must have (:class:`sealcheck.systems.outputs.Output`)
OUTPUT_METHODS = ("uppers", "progress", "export")
#: what only an output that subclasses :class:`~sealcheck.systems.outputs.Output` is asked for
OUTPUT_OPTIONS = ("capture", "watch_batches", "watch_checkpoint", "close", "between_batches")


class DescriptorError(ValueError):
    """A descriptor's own method raised, or returned what the harness cannot use: the user's
    mistake, said in one line that names the method and what to do instead (the harness
    refuses the run with it, as a bad setting: exit 254)."""


def raised(exc: BaseException, limit: int = 300) -> str:
    """``KeyError: 'x'``: an exception and what it says, in one line of at most about
    ``limit`` characters."""
    said = " / ".join(line.strip() for line in str(exc).splitlines() if line.strip())
    said = cut(said, limit)
    return type(exc).__name__ + (f": {said}" if said else "")


def _call(job: object, method: str, run: object, before: bool) -> Any:
    """``job.<method>(run)``; what it raises as a :class:`DescriptorError` (Sealcheck's own
    set-up, a jar cache not filled, passes as it is: it says itself what to do)."""
    try:
        return getattr(job, method)(run)
    except JarsMissingError:
        raise
    except Exception as exc:
        when = (
            "it is called before the run starts, with placeholder values and run.dir not "
            "created yet"
            if before
            else "it was called with the run's own values"
        )
        raise DescriptorError(
            f"{type(job).__name__}.{method}(run) raised {raised(exc)}: fix the descriptor ({when})"
        ) from exc


def call_output(job: object, run: object, before: bool = False) -> Output:
    """``job.output(run)``, checked: an :class:`~sealcheck.systems.outputs.Output`, or an
    object with :data:`OUTPUT_METHODS` and none of :data:`OUTPUT_OPTIONS` (taken as an
    output with the defaults: :class:`~sealcheck.systems.outputs.base.Plain`)."""
    from sealcheck.systems.outputs.base import Output, Plain

    out = _call(job, "output", run, before)
    if isinstance(out, Output):
        undefined = [m for m in OUTPUT_METHODS if getattr(type(out), m) is getattr(Output, m)]
        if undefined:  # the base's raise NotImplementedError: say so now, not mid-run
            raise DescriptorError(
                f"{type(job).__name__}.output(run) returned {named(out)}, which does not "
                f"define {', '.join(f'{m}()' for m in undefined)}: an Output defines "
                "uppers(), progress() and export(run_dir)"
            )
        return out
    missing = [m for m in OUTPUT_METHODS if not callable(getattr(out, m, None))]
    if missing:
        lacks = f", which has no {', '.join(f'{m}()' for m in missing)}"
        raise DescriptorError(
            f"{type(job).__name__}.output(run) returned {named(out)}"
            + (lacks if len(missing) < len(OUTPUT_METHODS) else "")
            + ": return an Output (uppers(), progress(), export(run_dir)), e.g. "
            'sealcheck.DeltaOutput(run.dir / "checkpoint", run.dir / "table", key="id")'
        )
    ignored = [m for m in OUTPUT_OPTIONS if hasattr(out, m)]
    if ignored:
        raise DescriptorError(
            f"{type(job).__name__}.output(run) returned {named(out)}, which has "
            f"{ignored[0]} but does not subclass sealcheck.Output: subclass it, so that the "
            f"harness calls {ignored[0]}"
        )
    return Plain(out)


def call_command(job: object, run: object, before: bool = False) -> list[str]:
    """``job.command(run)``, checked (a non-empty list or tuple of text, paths or whole
    numbers), as text."""
    argv = _call(job, "command", run, before)
    where = f"{type(job).__name__}.command(run) returned {named(argv)}"
    if isinstance(argv, str):
        try:
            words = shlex.split(argv)
        except ValueError:  # unbalanced quotes: split at blanks, for the example
            words = argv.split()
        example = json.dumps(words or ["python", "-m", "my_job"])
        raise DescriptorError(f"{where}: return a list of arguments, e.g. {example}")
    if not isinstance(argv, Sequence) or isinstance(argv, bytes) or not argv:
        raise DescriptorError(
            f'{where}: return the program and its arguments, e.g. [sys.executable, "-m", '
            '"my_job", "--bootstrap", run.bootstrap]'
        )
    for n, arg in enumerate(argv):
        # a whole number (``run.max_records_per_step``) is taken as its digits, as always
        whole = isinstance(arg, int) and not isinstance(arg, bool)
        if not (isinstance(arg, str | os.PathLike) or whole):
            raise DescriptorError(
                f"{where}: argument {n} is {named(arg)}: give every argument as text, a path "
                f"or a whole number, e.g. str({short(arg)})"
            )
    return [str(a) for a in argv]


def call_environment(job: object, run: object, before: bool = False) -> dict[str, str]:
    """``job.environment(run)``, checked (a mapping of text to text)."""
    env = _call(job, "environment", run, before)
    where = f"{type(job).__name__}.environment(run) returned {named(env)}"
    if not isinstance(env, Mapping):
        raise DescriptorError(
            f'{where}: return a mapping of variable name to value, e.g. {{"TZ": "UTC"}}'
        )
    for name, value in env.items():
        if not isinstance(name, str):
            what = f"the name {named(name)}"
        elif not isinstance(value, str):
            what = f"the value of {name!r} is {named(value)}"
        else:
            continue
        example = f"{{{json.dumps(str(name))}: {json.dumps(str(value))}}}"
        raise DescriptorError(f"{where}: {what}: give every name and value as text, e.g. {example}")
    return dict(env)
