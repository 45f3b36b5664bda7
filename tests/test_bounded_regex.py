"""The time limit on a user's regex (patchset/bounded_regex.py) leaves nothing behind: no
handler of its own, no timer, whether the search ran out or not."""

from __future__ import annotations

import contextlib
import re
import signal
from collections.abc import Iterator

import pytest

from patchkeeper.patchset.bounded_regex import RegexTimeout, search_within


@pytest.fixture
def alarm_handler() -> Iterator[object]:
    def mine(_signum: int, _frame: object) -> None:
        raise AssertionError("SIGALRM reached the handler that was there before")

    before = signal.signal(signal.SIGALRM, mine)
    yield mine
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGALRM, before)


def test_a_limit_that_runs_out_at_the_end_of_the_search_leaves_no_handler_behind(
    alarm_handler: object,
) -> None:
    """A search of under 4096 steps never lets Python look at signals: a limit that runs out
    during it is noticed only afterwards, in `signal.signal` restoring the handler, and the
    limit's handler raised there, so it stayed installed (200 of 200 runs before the fix)."""
    pattern, text = re.compile(r"^[ab]*c"), "ab" * 1500
    for _ in range(50):
        with contextlib.suppress(RegexTimeout):
            search_within(pattern, text, seconds=1e-6)
        assert signal.getsignal(signal.SIGALRM) is alarm_handler
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_a_search_that_backtracks_without_end_still_runs_out() -> None:
    with pytest.raises(RegexTimeout):
        search_within(re.compile(r"(a+)+$"), "a" * 40 + "b", seconds=0.2)
    assert signal.getsignal(signal.SIGALRM) is signal.SIG_DFL
    assert search_within(re.compile(r"(\d+)"), "v 1") is not None


def test_a_timer_set_before_goes_on_with_what_it_had_left(alarm_handler: object) -> None:
    """It was put back with what it had when the search began, as if no time had passed."""
    signal.setitimer(signal.ITIMER_REAL, 30.0)
    with pytest.raises(RegexTimeout):
        search_within(re.compile(r"(a+)+$"), "a" * 40 + "b", seconds=0.3)
    left = signal.getitimer(signal.ITIMER_REAL)[0]
    assert 0 < left <= 29.75
    assert signal.getsignal(signal.SIGALRM) is alarm_handler
