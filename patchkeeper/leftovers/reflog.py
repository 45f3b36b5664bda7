"""Reflogs read with GitPython's RefLog, in-process: the stash list without a git process.

GitPython's object model replaces text we would otherwise parse by hand (`git stash list
--format=...`). It is imported only here, and only when a reflog exists: importing it costs
about 70 ms, which the commands that never look at a stash (`check`, `--version`, `--help`)
do not pay. No `Repo` is opened, so no `git cat-file` process is left behind.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ReflogEntry:
    """One entry of a ref's reflog."""

    selector: str  # NAME@{n}, n = 0 for the newest
    sha: str  # the commit the ref pointed at after this entry
    time: float  # when the entry was written (Unix time)
    message: str


def _common_dir(git_dir: Path) -> Path:
    """Where shared refs and their logs live (a linked worktree's git dir points there)."""
    pointer = git_dir / "commondir"
    if pointer.is_file():
        return (git_dir / pointer.read_text(encoding="utf-8").strip()).resolve()
    return git_dir


def read_reflog(git_dir: Path, ref: str) -> list[ReflogEntry]:
    """The reflog of REF (`refs/stash`, `refs/remotes/origin/main`), newest first."""
    path = _common_dir(git_dir) / "logs" / ref
    if not path.is_file():
        return []
    from git.refs.log import RefLog  # lazy: see the module docstring

    name = ref.removeprefix("refs/")
    entries = list(reversed(RefLog.from_file(str(path))))
    return [
        ReflogEntry(f"{name}@{{{n}}}", entry.newhexsha, float(entry.time[0]), entry.message)
        for n, entry in enumerate(entries)
    ]
