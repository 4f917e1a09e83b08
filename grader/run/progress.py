"""A one-line progress bar on stderr: counts per status and the estimated time left."""
from __future__ import annotations

import sys
import time

from grader.sanitize import printable


class Progress:
    def __init__(self, total: int, skipped: int, stream=None):
        self.total, self.skipped = total, skipped
        self.stream = stream or sys.stderr
        self.counts = {"graded": 0, "error": 0, "timeout": 0}
        self.started = time.monotonic()
        self.interactive = getattr(self.stream, "isatty", lambda: False)()

    @property
    def done(self) -> int:
        return sum(self.counts.values())

    def finished(self, status: str, name: str) -> None:
        self.counts[status] = self.counts.get(status, 0) + 1
        self.show(last=name)

    def eta(self) -> str:
        if not self.done:
            return "--:--"
        left = (time.monotonic() - self.started) / self.done * (self.total - self.done)
        return f"{int(left // 60):02d}:{int(left % 60):02d}"

    def line(self) -> str:
        width = 24
        filled = int(width * self.done / max(1, self.total))
        counts = " ".join(f"{n} {s}" for s, n in self.counts.items())
        resumed = f" (+{self.skipped} done before)" if self.skipped else ""
        bar = "#" * filled + "." * (width - filled)
        return f"[{bar}] {self.done}/{self.total}{resumed} | {counts} | ETA {self.eta()}"

    def show(self, last: str = "") -> None:
        if self.interactive:
            self.stream.write("\r" + self.line() + "\033[K")
        elif last:
            self.stream.write(f"{self.line()} | {printable(last, limit=80)}\n")
        self.stream.flush()

    def close(self) -> None:
        if self.interactive:
            self.stream.write("\n")
            self.stream.flush()
