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

SEARCH_SECONDS = 2.0


class RegexTimeout(Exception):
    """A search ran past its time limit."""


def search_within(
    pattern: re.Pattern[str], text: str, seconds: float = SEARCH_SECONDS
) -> re.Match[str] | None:
    """PATTERN.search(TEXT), raising RegexTimeout past SECONDS (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        return pattern.search(text)

    def expire(_signum: int, _frame: object) -> None:
        raise RegexTimeout

    previous = signal.signal(signal.SIGALRM, expire)
    earlier = signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return pattern.search(text)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if earlier[0]:  # a timer someone else set goes on
            signal.setitimer(signal.ITIMER_REAL, *earlier)
