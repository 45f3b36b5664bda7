"""Process liveness, asked of the kernel in one place: is this process alive, is it still the
same process, what is it called, is any process of this group alive.

On Linux the answers come from /proc: `/proc/PID/stat` (state, process group, start time),
`/proc/PID/comm` (the name), `/proc/stat` (when the machine booted). A process is the same one
when its pid and its start time (clock ticks since boot) are both what was recorded: a pid
reused after the first one ended (a reboot, a wrap-around) has another start time. A zombie
(exited, not yet reaped) counts as gone. Where there is no /proc, `kill(pid, 0)` proves only
that a pid exists, and a start time is then "".
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from functools import cache
from pathlib import Path

_PROC = Path("/proc")
_GONE = ("Z", "X")  # zombie, dead: exited


def _stat_fields(pid: int | str) -> list[str]:
    """The fields of /proc/PID/stat after the command name: state, ppid, pgrp, ..."""
    # The command name (field 2) may hold spaces and parentheses: split after the last ')'.
    return (_PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()


def process_start_time(pid: int) -> str | None:
    """The kernel's start time of PID (clock ticks since boot), or None when there is no such pid.

    A zombie counts as gone. On systems without /proc only existence can be proven; the start
    time is then "".
    """
    try:
        fields = _stat_fields(pid)
        return None if fields[0] in _GONE else fields[19]
    except FileNotFoundError:
        return None
    except (OSError, IndexError):
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        return ""
    return ""


def same_process(pid: int, start_time: str) -> bool:
    """Provably the process recorded as PID with START_TIME: it still runs, and its start time
    is known and the same (an unknown one proves nothing)."""
    return bool(start_time) and process_start_time(pid) == start_time


def may_be_same_process(pid: int, start_time: str | None) -> bool:
    """Whether PID still runs and may be the process recorded with START_TIME: without a
    start time on either side a reused pid cannot be told apart, so it counts as the same
    (busy, never taken for dead)."""
    now = process_start_time(pid)
    if now is None:
        return False
    return not start_time or not now or now == start_time


def provably_gone(pid: int) -> bool:
    """Whether the kernel says no process has PID. One of another user's, or a pid that cannot
    be asked about, is not provably gone."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except (PermissionError, OverflowError):
        return False
    return False


@cache
def _boot_time() -> float | None:
    try:
        for line in (_PROC / "stat").read_text().splitlines():
            if line.startswith("btime "):
                return float(line.split()[1])
    except OSError:
        pass
    return None


def started_at(start_time: str) -> str:
    """START_TIME (ticks since boot) as a local wall-clock time, when that can be worked out."""
    boot = _boot_time()
    if not start_time.isdigit() or boot is None:
        return start_time or "unknown"
    seconds = boot + int(start_time) / os.sysconf("SC_CLK_TCK")
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(seconds))


def state_and_group(pid: int | str) -> tuple[str, int] | None:
    """PID's state letter and process group, or None when it cannot be read (gone)."""
    try:
        fields = _stat_fields(pid)
        return fields[0], int(fields[2])  # state, ppid, pgrp
    except (OSError, IndexError, ValueError):
        return None


def _members(pgid: int) -> Iterator[int]:
    for stat in _PROC.glob("[0-9]*/stat"):
        found = state_and_group(stat.parent.name)
        if found is not None and found[1] == pgid and found[0] not in _GONE:
            with contextlib.suppress(ValueError):
                yield int(stat.parent.name)


def group_members(pgid: int) -> list[int]:
    """The live (not zombie) processes of group PGID, by /proc; empty where there is none."""
    return sorted(_members(pgid))


def group_alive(pgid: int) -> bool:
    """Whether any process of group PGID still runs (zombies waiting to be reaped do not)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    if not (_PROC / "self" / "stat").exists():
        return True
    return any(True for _ in _members(pgid))


def command_name(pid: int | str) -> str:
    """PID's command name as the kernel keeps it (`git`, `python3`), or "" when unknown."""
    try:
        return (_PROC / str(pid) / "comm").read_text().strip()
    except OSError:
        return ""
