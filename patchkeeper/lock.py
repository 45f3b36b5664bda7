"""One patchkeeper at a time per install.

The lock file holds the owner's pid, the pid's start time and the current phase. "Busy" (a live
owner, however slow) and "gone" (the pid no longer exists, or now belongs to a process that
started at another time) are different answers: only a provably dead owner's lock is taken
over, never one that is merely taking long (see seed 000: a slow holder is not a lost one).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from patchkeeper.errors import BusyError

LOCK_NAME = "lock"
_POLL_SECONDS = 0.1


def process_start_time(pid: int) -> str | None:
    """The kernel's start time of PID (clock ticks since boot), or None when there is no such pid.

    On systems without /proc only existence can be proven; the start time is then "".
    """
    stat = Path(f"/proc/{pid}/stat")
    try:
        # The command name (field 2) may hold spaces and parentheses: split after the last ')'.
        fields = stat.read_text().rsplit(")", 1)[1].split()
        return fields[19]
    except FileNotFoundError:
        return None
    except OSError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        return ""
    return ""


@dataclass(frozen=True)
class Owner:
    pid: int
    start_time: str
    command: str
    phase: str
    since: float

    def describe(self) -> str:
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.since))
        return f"pid {self.pid} ({self.command}, phase {self.phase}, since {started})"

    def is_alive(self) -> bool:
        now = process_start_time(self.pid)
        return now is not None and (now == self.start_time or not now or not self.start_time)


def read_owner(path: Path) -> Owner | None:
    """The recorded owner; None if there is no lock. A lock that cannot be read is never taken."""
    try:
        data = json.loads(path.read_text())
        return Owner(
            pid=int(data["pid"]),
            start_time=str(data["start_time"]),
            command=str(data["command"]),
            phase=str(data["phase"]),
            since=float(data["since"]),
        )
    except FileNotFoundError:
        return None
    except (ValueError, KeyError, TypeError) as exc:
        raise BusyError(
            f"{path}: lock file unreadable ({exc}); remove it if no patchkeeper runs"
        ) from None


class InstallLock:
    def __init__(self, state_dir: Path, command: str) -> None:
        self.path = state_dir / LOCK_NAME
        self.command = command
        self.taken_over: Owner | None = None
        self._pid = os.getpid()
        self._since = time.time()

    def _payload(self, phase: str) -> str:
        return json.dumps(
            {
                "pid": self._pid,
                "start_time": process_start_time(self._pid) or "",
                "command": self.command,
                "phase": phase,
                "since": self._since,
            }
        )

    def _try_create(self) -> bool:
        """Create the lock atomically: write a private file in full, then hard-link it in place."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f"{LOCK_NAME}.{self._pid}.tmp")
        tmp.write_text(self._payload("start"))
        try:
            os.link(tmp, self.path)
            return True
        except FileExistsError:
            return False
        finally:
            tmp.unlink(missing_ok=True)

    def _remove_dead(self, owner: Owner) -> None:
        # Rename is atomic: of two processes that both found the owner dead, one moves it away.
        grave = self.path.with_name(f"{LOCK_NAME}.dead.{owner.pid}.{self._pid}")
        try:
            os.rename(self.path, grave)
        except FileNotFoundError:
            return
        try:
            if read_owner(grave) == owner:
                self.taken_over = owner
            else:  # a live owner got in between our read and the rename: put its lock back
                with suppress(FileExistsError):
                    os.link(grave, self.path)
        finally:
            grave.unlink(missing_ok=True)

    def acquire(self, wait: float = 0.0) -> None:
        deadline = time.monotonic() + wait
        while True:
            if self._try_create():
                return
            owner = read_owner(self.path)
            if owner is not None and not owner.is_alive():
                self._remove_dead(owner)
                continue
            if owner is not None and time.monotonic() >= deadline:
                raise BusyError(
                    f"{self.path.parent.parent.parent}: busy: held by {owner.describe()}"
                )
            time.sleep(_POLL_SECONDS)

    def set_phase(self, phase: str) -> None:
        tmp = self.path.with_name(f"{LOCK_NAME}.{self._pid}.tmp")
        tmp.write_text(self._payload(phase))
        os.replace(tmp, self.path)

    def release(self) -> None:
        owner = read_owner(self.path)
        if owner is not None and owner.pid == self._pid:
            self.path.unlink(missing_ok=True)


@contextmanager
def install_lock(state_dir: Path, command: str, wait: float = 0.0) -> Iterator[InstallLock]:
    lock = InstallLock(state_dir, command)
    lock.acquire(wait)
    try:
        yield lock
    finally:
        lock.release()
