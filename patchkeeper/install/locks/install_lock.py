"""One patchkeeper at a time per install: the kernel, not a guess, says whether the owner lives.

`.git/patchkeeper/lock` is one file that is created once and never unlinked. An owner opens
it and takes `flock(LOCK_EX | LOCK_NB)` on it, holding the descriptor for its whole life; the
content (JSON: pid, the pid's start time, command, phase, since) only describes the owner.

Why flock: the kernel drops the lock when the owner's last descriptor closes, which includes
being killed with SIGKILL. "Is the owner dead?" is then answered by the kernel atomically with
"and now it is mine": there is no window between reading a dead owner's record and replacing
it for a second process to get into. The previous design (a hard-linked file, renamed away
when its pid was gone) had exactly such a window: two processes that both saw the dead owner
could rename away each other's fresh lock, and two of them believed they held it.

Why never unlinked: a flock belongs to an inode, not to a name. If a releasing (or taking-over)
process unlinked the file, a process that had opened the old inode just before could lock it
while a third created and locked a new file under the same name: two holders again. Release
therefore truncates the content and unlocks; an empty file means "nobody".

The answers:
- busy: flock is refused. Someone alive holds the lock, however slow; the record names it
  (pid, start time, phase). We poll until `--wait` runs out, then exit 6 (BusyError). A
  record that cannot be read (an owner half-way through rewriting it, or garbage) is never a
  reason to take a lock flock says is held.
- gone: flock is granted and the record still names another pid: that owner died without
  releasing. The lock is ours and the dead owner is reported (`taken_over`). A record naming a
  process that is provably still alive (same pid, same start time) is the one exception: it is
  an older patchkeeper that did not use flock, and is treated as busy.
- free: flock is granted and the record is empty (released), or unreadable (nobody holds it,
  whatever it says).

Limits: flock is advisory and local. On NFS it is emulated with POSIX locks (or not
supported at all) and a holder on another machine may be invisible; keep installs on a local
filesystem. The descriptor is not inherited by the commands we start (Python opens it
non-inheritable and subprocess closes other fds), but a bare `os.fork()` without exec would
share the lock with the child, keeping it held while the child lives.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from patchkeeper.install.system.liveness import process_start_time, same_process, started_at
from patchkeeper.model.errors import BusyError, environment_problem, is_environment_error

if TYPE_CHECKING:
    from patchkeeper.install.writer.settle import Settled

LOCK_NAME = "lock"
_POLL_SECONDS = 0.1
_READ_TRIES = 5  # a record being rewritten is retried this often, _READ_PAUSE apart
_READ_PAUSE = 0.02


@dataclass(frozen=True)
class Owner:
    """Who holds the install's lock: the process, its command, its phase, since when."""

    pid: int
    start_time: str
    command: str
    phase: str
    since: float

    def describe(self) -> str:
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.since))
        return (
            f"pid {self.pid} ({self.command}, phase {self.phase}, since {since}, "
            f"process started {started_at(self.start_time)})"
        )

    def provably_alive(self) -> bool:
        """The same process is still running: same pid and the same known start time."""
        return same_process(self.pid, self.start_time)


def _parse(text: str) -> Owner:
    data = json.loads(text)
    return Owner(
        pid=int(data["pid"]),
        start_time=str(data["start_time"]),
        command=str(data["command"]),
        phase=str(data["phase"]),
        since=float(data["since"]),
    )


def _read_record(path: Path, tries: int = _READ_TRIES) -> tuple[Owner | None, str]:
    """The recorded owner and, when there is content that cannot be read, why.

    The owner rewrites the record in place, so a reader may catch it half-written: an
    unreadable record is read again a few times before it is reported as unreadable.
    """
    problem = ""
    for attempt in range(tries):
        if attempt:
            time.sleep(_READ_PAUSE)
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return None, ""
        except OSError as exc:
            problem = exc.strerror or str(exc)
            continue
        if not text.strip():
            return None, ""
        try:
            return _parse(text), ""
        except (ValueError, KeyError, TypeError) as exc:
            problem = str(exc)
    return None, problem


def live_owner(state_dir: Path) -> Owner | None:
    """Who holds the install's lock now, read without taking it (a reader such as `status`
    never makes a starting command busy): the recorded owner, when that very process still
    runs (same pid, same start time); None when nobody does, or the owner died holding it."""
    owner, _ = _read_record(state_dir / LOCK_NAME)
    return owner if owner is not None and owner.provably_alive() else None


class InstallLock:
    def __init__(self, state_dir: Path, command: str) -> None:
        self.path = state_dir / LOCK_NAME
        self.command = command
        self.taken_over: Owner | None = None
        self.settled: Settled | None = None  # an interrupted tree write undone on taking it
        self._pid = os.getpid()
        self._start_time = process_start_time(self._pid) or ""
        self._since = time.time()
        self._fd: int | None = None

    def _payload(self, phase: str) -> bytes:
        return json.dumps(
            {
                "pid": self._pid,
                "start_time": self._start_time,
                "command": self.command,
                "phase": phase,
                "since": self._since,
            }
        ).encode()

    def _write(self, phase: str) -> None:
        """Rewrite the record in place on the locked descriptor (never a new file: see above).

        Written first and cut to length after, so a reader sees the old record, a mix it cannot
        parse (and retries), or the new one; never an empty file while the lock is held.
        """
        assert self._fd is not None
        data = self._payload(phase)
        try:
            os.pwrite(self._fd, data, 0)
            os.ftruncate(self._fd, len(data))
        except OSError as exc:  # disk full, read-only: the user's to fix, named (exit 7)
            if is_environment_error(exc):
                raise environment_problem(exc, self.path, undone=True) from None
            raise

    def _busy(self, problem: str, owner: Owner | None) -> BusyError:
        install = self.path.parent.parent.parent
        if owner is not None:
            return BusyError(f"{install}: busy: held by {owner.describe()}")
        detail = f"its lock file is unreadable: {problem}" if problem else "not yet recorded"
        return BusyError(f"{install}: busy: held by another live process ({detail})")

    def _try_lock(self, fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                return False
            raise
        return True

    def acquire(self, wait: float = 0.0) -> None:
        deadline = time.monotonic() + wait
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            while True:
                if self._try_lock(fd):
                    owner, problem = _read_record(self.path, tries=1)  # nobody is writing
                    mine = owner is not None and (owner.pid, owner.start_time) == (
                        self._pid,
                        self._start_time,
                    )
                    if owner is None or mine or not owner.provably_alive():
                        # The kernel says nobody holds it: a recorded owner died without
                        # releasing (an unreadable record names nobody we could report).
                        self.taken_over = None if owner is None or mine else owner
                        self._fd = fd
                        self._write("start")
                        return
                    fcntl.flock(fd, fcntl.LOCK_UN)  # an older patchkeeper, alive without flock
                else:
                    owner, problem = _read_record(self.path)
                if time.monotonic() >= deadline:
                    raise self._busy(problem if owner is None else "", owner)
                time.sleep(_POLL_SECONDS)
        except BaseException:
            if self._fd is None:
                os.close(fd)
            raise

    def set_phase(self, phase: str) -> None:
        self._write(phase)

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            os.ftruncate(fd, 0)  # "nobody": emptied while still ours, then let go
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)  # closing the last descriptor would drop the flock anyway


@contextmanager
def install_lock(state_dir: Path, command: str, wait: float = 0.0) -> Iterator[InstallLock]:
    lock = InstallLock(state_dir, command)
    lock.acquire(wait)
    try:
        yield lock
    finally:
        lock.release()
