"""Progress on stderr for work that takes more than about a second.

On a terminal: one line rewritten in place ("check: 12/60 refs (v0.23.4)"), shown only once
the work has taken a second, and cleared at the end, so a quick run prints nothing; a dumb
one (TERM=dumb), which cannot clear a line, gets the plain lines a log gets. Anywhere
else (a CI log) it is quiet unless asked for (`--progress`); asked for, it prints a plain
line at most once a second, and the last one.
"""

from __future__ import annotations

import os
import sys
import time
from typing import TextIO

DELAY = 1.0  # seconds of silence before the first line
INTERVAL_TTY = 0.1
INTERVAL_LOG = 1.0


class Progress:
    def __init__(
        self,
        label: str,
        total: int,
        unit: str,
        *,
        enabled: bool | None = None,
        stream: TextIO | None = None,
    ) -> None:
        self.stream = stream or sys.stderr
        terminal = self.stream.isatty()
        self.tty = terminal and os.environ.get("TERM") != "dumb"  # a line rewritten in place
        self.enabled = terminal if enabled is None else enabled
        self.label, self.total, self.unit = label, total, unit
        self.started = time.monotonic()
        self.shown_at: float | None = None
        self.drawn = False

    def update(self, done: int, current: str = "") -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.started < DELAY and done < self.total:
            return
        interval = INTERVAL_TTY if self.tty else INTERVAL_LOG
        if self.shown_at is not None and now - self.shown_at < interval and done < self.total:
            return
        if self.shown_at is None and done >= self.total and now - self.started < DELAY:
            return  # done within the second: nothing to show
        self.shown_at = now
        line = f"{self.label}: {done}/{self.total} {self.unit}"
        if current:
            line += f" ({current})"
        if self.tty:
            self.stream.write("\r\x1b[K" + line)
            self.drawn = True
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.drawn:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.drawn = False
