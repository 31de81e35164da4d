"""A fake incarnation of the system under test for the supervisor's unit tests: it runs until
``finish(code)``, ``kill()`` or ``stop()``, and logs the lines it is given."""

from __future__ import annotations

import threading


class FakeIncarnation:
    """Runs until ``finish(code)`` or ``kill()``; ``log(*lines)`` appends to its log."""

    frozen = False

    def __init__(self, n: int, base: int = 1000) -> None:
        self.ident, self.code = base + n, 0
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._log: list[str] = []

    @property
    def alive(self) -> bool:
        return not self._done.is_set()

    def start(self) -> int:
        return self.ident

    def log(self, *lines: str) -> None:
        with self._lock:
            self._log.extend(lines)

    def finish(self, code: int) -> None:
        self.code = code
        self._done.set()

    def kill(self) -> int | None:
        if not self.alive:
            return None
        self.finish(-9)
        return self.ident

    def pause(self) -> int:
        return self.ident

    def resume(self) -> None:
        return None

    def wait_exit(self) -> int:
        self._done.wait()
        return self.code

    def stop(self, timeout_s: float = 30.0) -> int:
        if self.alive:
            self.finish(0)
        return self.code

    def log_text(self) -> str:
        with self._lock:
            return "".join(self._log)
