"""A progress bar on stderr: redrawn in place on a terminal, a line per step elsewhere."""

from __future__ import annotations

import sys
from typing import TextIO


class ProgressBar:
    """`update(n)` after each batch; `close()` ends the line."""

    def __init__(self, total: int, label: str, stream: TextIO | None = None, width: int = 30):
        self.total, self.done, self.label, self.width = total, 0, label, width
        self._stream = stream or sys.stderr
        self._tty = self._stream.isatty()

    def update(self, count: int) -> None:
        before, self.done = self.done, self.done + count
        # Off a terminal (a log file, CI) a line per tenth is enough.
        same_tenth = self.total and 10 * self.done // self.total == 10 * before // self.total
        if not self._tty and same_tenth and self.done < self.total:
            return
        filled = (
            self.width if not self.total else self.width * min(self.done, self.total) // self.total
        )
        bar = "#" * filled + "-" * (self.width - filled)
        text = f"{self.label} [{bar}] {self.done}/{self.total}"
        self._stream.write(f"\r{text}" if self._tty else f"{text}\n")
        self._stream.flush()

    def close(self) -> None:
        if self._tty and self.done:
            self._stream.write("\n")
            self._stream.flush()
