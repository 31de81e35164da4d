"""The live view of a run: a rich panel on a terminal, plain lines elsewhere (CI logs).

Every executed nemesis action and phase change is printed as a line either way, so a log of
a run reads like its schedule.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.table import Table


@dataclass
class Status:
    """What the display shows; the runner updates it."""

    phase: str = "starting"
    elapsed_s: float = 0.0
    duration_s: float = 0.0
    writes: dict[str, int] = field(default_factory=dict)  # ok / info / fail
    uppers: dict[str, int] = field(default_factory=dict)
    #: incarnations started so far (the newest is ``sut-<incarnation - 1>``)
    incarnation: int = 0
    last_action: str = ""

    @property
    def newest(self) -> str:
        """The newest incarnation's name, as the history, the logs and the report call it
        (``sut-0`` is the first)."""
        return f"sut-{self.incarnation - 1}" if self.incarnation > 0 else "none yet"


class Display:
    """Prints lines; on a terminal also keeps a live status panel."""

    def __init__(
        self, enabled: bool = True, console: Console | None = None, live: bool = True
    ) -> None:
        self.console = console or Console(highlight=False)
        self.status = Status()
        self._live: Live | None = None
        self._enabled = enabled
        self._want_live = live
        self._last_plain = 0.0
        #: seconds on the run's own clock (the history's, the report's time base), once the
        #: run has one; before, the phase's elapsed time
        self.clock: Callable[[], float] | None = None

    def now(self) -> float:
        """The time a line is stamped with: the run's clock (0 s = the run's start, as in
        the report), or the phase's elapsed time before the run has one."""
        return self.clock() if self.clock is not None else self.status.elapsed_s

    def __enter__(self) -> Display:
        if self._enabled and self._want_live and self.console.is_terminal:
            self._live = Live(self._render(), console=self.console, refresh_per_second=4)
            self._live.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._live is not None:
            self._live.__exit__(*exc)
            self._live = None

    def log(self, line: str) -> None:
        """One line above the panel (or plain), as it is: never wrapped into several (a log
        reader greps for it) nor read as markup (a job's error may hold ``[/tmp/x]``)."""
        if not self._enabled:
            return
        self.console.print(f"[{self.now():7.1f}s] {line}", markup=False, soft_wrap=True)

    def update(self, **changes: Any) -> None:
        """Change the status; redraw (or, without a terminal, print it every 10 s)."""
        for key, value in changes.items():
            setattr(self.status, key, value)
        if self._live is not None:
            self._live.update(self._render())
        elif self._enabled and time.monotonic() - self._last_plain > 10:
            self._last_plain = time.monotonic()
            self.console.print(self._plain(), markup=False, soft_wrap=True)

    def _plain(self) -> str:
        s = self.status
        w = s.writes
        into = f" ({s.elapsed_s:.0f} s in)" if self.clock is not None else ""
        return (
            f"[{self.now():7.1f}s] {s.phase}{into}: writes acknowledged {w.get('ok', 0)}, "
            f"uncertain {w.get('info', 0)}, failed {w.get('fail', 0)}; sealed (uppers) "
            f"{s.uppers}; running {s.newest}"
        )

    def _render(self) -> Table:
        s = self.status
        table = Table(title=f"sealcheck run — {s.phase}", show_header=False, expand=False)
        table.add_row("time", f"{s.elapsed_s:.1f}s / {s.duration_s:.0f}s")
        table.add_row(
            "writes",
            f"ok {s.writes.get('ok', 0)}  info {s.writes.get('info', 0)}  "
            f"fail {s.writes.get('fail', 0)}",
        )
        table.add_row("sealed (uppers)", ", ".join(f"{k} {v}" for k, v in sorted(s.uppers.items())))
        table.add_row("incarnation", s.newest)
        table.add_row("last fault", s.last_action or "-")
        return table
