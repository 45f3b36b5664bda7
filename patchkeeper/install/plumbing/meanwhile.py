"""Work started now and answered later: a git process whose answer is wanted only after other
work is done (the two run side by side; git waits on its disk, python on git)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def meanwhile(work: Callable[..., T], *args: Any, **kwargs: Any) -> Callable[[], T]:
    """Start WORK in a thread; the function returned waits for its answer and gives it back,
    or raises what it raised."""
    outcome: list[tuple[bool, Any]] = []

    def run() -> None:
        try:
            outcome.append((True, work(*args, **kwargs)))
        except BaseException as exc:  # handed to whoever waits for the answer
            outcome.append((False, exc))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()

    def answer() -> T:
        thread.join()
        done, value = outcome[0]
        if not done:
            raise value
        return value

    return answer
