"""git's lock files (`.git/index.lock`, `.git/HEAD.lock`, ...): who may still hold one.

A git killed half-way (an updater stopped at its timeout, a power cut) leaves its lock file
behind, and every later git command refuses to run until it is removed. But a lock file is
also exactly what a live git is working under, and removing it then lets a second git write
the same index at the same time. Its age says nothing about which it is (a checkout of a big
release runs for minutes), so a lock file is removed only when nobody can hold it:

- no process has the file open (git keeps the descriptor open while it works: /proc/*/fd),
- no git process works in the install (its cwd, or a path argument, inside the install): a
  git may hold the lock without an open descriptor between writing and renaming it,
- no git is left in the updater's process group, wherever it works, and no member of that
  group hides its descriptors from us.

Any other process left in the updater's group (a daemon it restarted) holds nothing: it is
named by `recover` and never keeps a stale lock alive. A git whose descriptors or cwd cannot
be read is counted as a holder, unless it could not have made the lock: git creates it, so
its owner is the user whose git made it, and a git running under none of that user's ids
(real, effective, saved, file system) is not its holder. On a shared host, that is every other
user's git, root's included: its descriptors are what cannot be read, and it did not make a
lock another user owns. This trusts the file system to record who created a file, as every
local Linux file system does (one that gives every file the same owner, vfat, or NFS with
all_squash, would not tell).
Linux /proc only; elsewhere nothing is ever removed (every lock counts as held).
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

from patchkeeper.install.checkout.install import Install
from patchkeeper.install.system.liveness import command_name, state_and_group

_PROC = Path("/proc")


@dataclass(frozen=True)
class Holder:
    """A process that holds one of git's own lock files."""

    pid: int
    command: str
    why: str

    def describe(self) -> str:
        return f"pid {self.pid} ({self.command}: {self.why})"


def lock_files(install: Install) -> list[Path]:
    """The lock files git leaves at the top of its directory (index.lock, HEAD.lock, ...)."""
    return sorted(p for p in install.git_dir.glob("*.lock") if p.is_file() or p.is_symlink())


def _argv(pid: str) -> list[str]:
    try:
        raw = (_PROC / pid / "cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def _uids(pid: str) -> set[int] | None:
    """PID's real, effective, saved and file-system uids; None when they cannot be read."""
    try:
        for line in (_PROC / pid / "status").read_text().splitlines():
            if line.startswith("Uid:"):
                return {int(uid) for uid in line.split()[1:]}
    except (OSError, ValueError):
        pass
    return None


def _owner(lock: Path) -> int | None:
    """The uid that created LOCK (its owner); None when it cannot be told."""
    try:
        return lock.lstat().st_uid
    except OSError:
        return None


def _opens(pid: str, target: str) -> bool | None:
    """Whether PID has TARGET open; None when its descriptors cannot be read."""
    try:
        fds = os.listdir(_PROC / pid / "fd")
    except FileNotFoundError:
        return False
    except OSError:
        return None
    for fd in fds:
        with contextlib.suppress(OSError):
            link = os.readlink(_PROC / pid / "fd" / fd)
            if link in (target, f"{target} (deleted)"):
                return True
    return False


def _inside(path: str, roots: tuple[Path, ...]) -> bool:
    candidate = Path(path.split("=", 1)[-1]) if path.startswith("--") else Path(path)
    if not candidate.is_absolute():
        return False
    return any(candidate == root or root in candidate.parents for root in roots)


def _is_git(pid: str, argv: list[str]) -> bool:
    name = Path(argv[0]).name if argv else ""
    return command_name(pid) == "git" or name == "git" or name.startswith("git-")


def holders(install: Install, lock: Path, updater_pgid: int | None = None) -> list[Holder]:
    """Every live process that holds, or may hold, LOCK (see the module's docstring)."""
    if not (_PROC / "self" / "fd").is_dir():
        return [Holder(0, "?", "no /proc here: who holds it cannot be checked")]
    roots = (install.path, install.git_dir)
    owner = _owner(lock)
    found = []
    for entry in _PROC.iterdir():
        pid = entry.name
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        stat = state_and_group(pid)
        if stat is None or stat[0] in ("Z", "X"):
            continue
        argv = _argv(pid)
        command = " ".join(argv)[:80] or command_name(pid) or "?"
        is_git = _is_git(pid, argv)
        opens = _opens(pid, str(lock))
        in_group = updater_pgid is not None and stat[1] == updater_pgid
        why = ""
        if opens:
            why = f"has {lock.name} open"
        elif in_group and (is_git or opens is None):
            what = "a git" if is_git else "a process whose files cannot be inspected"
            why = f"{what} still in the updater's process group {updater_pgid}"
        elif is_git and _could_make(pid, owner):  # another user's git did not make it
            try:
                cwd = os.readlink(_PROC / pid / "cwd")
            except FileNotFoundError:
                continue  # it is exiting: its files are closed, it makes and renames nothing
            except OSError:
                cwd = None
            if cwd is None or opens is None:
                why = "a git whose files cannot be inspected"
            elif _inside(cwd, roots) or any(_inside(arg, roots) for arg in argv[1:]):
                why = "a git working in the install"
        if why:
            found.append(Holder(int(pid), command, why))
    return found


def _could_make(pid: str, owner: int | None) -> bool:
    """Whether PID runs under the uid that owns the lock (or either cannot be told)."""
    uids = _uids(pid)
    return owner is None or uids is None or owner in uids
