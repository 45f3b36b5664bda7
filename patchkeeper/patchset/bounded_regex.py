"""A user's regex (`version_pattern`, `pattern`) with its work bounded: Python's `re`
backtracks, and a pattern like `(a+)+$` on a line of forty `a`s and a `b` runs for hours.

The search runs under a time limit: an interval timer whose signal `re` notices between
steps of its matching, so a search that runs out is a reason, never a hang. Refusing
"dangerous" patterns when the set is loaded would not bound it (`(a|aa)*$` has no nested
repeat and still takes exponential time) and would refuse common safe ones (`\\d+(\\.\\d+)*`).
The timer needs the main thread, where patchkeeper reads every version; a search started
elsewhere runs unbounded (only its input, a capped file read, is bounded).
"""

from __future__ import annotations

import re
import signal
import threading
import time

SEARCH_SECONDS = 2.0


class RegexTimeout(Exception):
    """A search ran past its time limit."""


def search_within(
    pattern: re.Pattern[str], text: str, seconds: float = SEARCH_SECONDS
) -> re.Match[str] | None:
    """PATTERN.search(TEXT), raising RegexTimeout past SECONDS (main thread only).

    Python runs a signal's handler at its next check, which may come after the search has
    returned (`re` checks only every few thousand steps; `signal.signal` checks first thing):
    the handler stays quiet once the search is over, so putting the previous one back always
    happens, and no handler or timer of this search outlives it."""
    if threading.current_thread() is not threading.main_thread():
        return pattern.search(text)
    searching = True

    def expire(_signum: int, _frame: object) -> None:
        if searching:
            raise RegexTimeout

    started, earlier = time.monotonic(), (0.0, 0.0)
    previous = signal.signal(signal.SIGALRM, expire)
    try:
        earlier = signal.setitimer(signal.ITIMER_REAL, seconds)
        try:
            return pattern.search(text)
        finally:
            searching = False
            signal.setitimer(signal.ITIMER_REAL, 0)
    finally:
        signal.signal(signal.SIGALRM, previous)
        if earlier[0]:  # a timer someone else set goes on, less the time spent here
            left = max(earlier[0] - (time.monotonic() - started), 1e-6)
            signal.setitimer(signal.ITIMER_REAL, left, earlier[1])
