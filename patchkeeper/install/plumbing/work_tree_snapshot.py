"""The work tree as a tree object, made from what git says is dirty: HEAD's tree with only
the paths that differ from it taken from the disk.

The tree is the one `git add -A` makes on a copy of the install's index (what this module
stands in for, and what checkout/tree_objects.py still does when this cannot tell): tracked and
untracked files, never ignored ones, except the paths the caller names. One `git status` (porcelain
v2, which writes nothing: GIT_OPTIONAL_LOCKS=0) finds the paths that can differ from HEAD:
the index against HEAD (answered from the index's cached trees), the disk against the index
(by stat data; a file is read only when its stat data cannot tell) and the untracked files.
Only those paths are hashed (`hash-object`, with git's own clean filters) and only the
folders on their way are written (plumbing/tree_overlay.py): what this costs grows with what
changed, not with the tree, but for the stat pass every `git status` makes.

Anything this does not take gives None, and the caller takes the whole-tree route: a
submodule or a nested repository, an unmerged path, a path that is a folder on the disk, a
path inside another changed path (a file that became a folder or the other way round), a
newline in a name.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from patchkeeper.install.plumbing import git
from patchkeeper.install.plumbing.scratch_index import index_entries, scratch_index
from patchkeeper.install.plumbing.tree_overlay import Entry, Overlaid, overlay

_GITLINK = "160000"
_STATUS = ["status", "--porcelain=v2", "-z", "--untracked-files=all", "--no-renames",
           "--ignore-submodules=none"]  # fmt: skip


@dataclass
class Dirty:
    """What can make the work tree differ from HEAD, as `git status` says. ENTRIES: each
    path whose snapshot entry is known already (the index's, where the disk holds what the
    index does; None: absent); FROM_DISK: each path to take from the disk, with the mode git
    gives the file there (None: an untracked file, whose mode git has not said); STAGED:
    whether the index differs from HEAD; ODD: something only the whole-tree route takes;
    UNMERGED: the unmerged paths, in git's order."""

    entries: dict[str, Entry] = field(default_factory=dict)
    from_disk: dict[str, str | None] = field(default_factory=dict)
    staged: bool = False
    odd: bool = False
    unmerged: list[str] = field(default_factory=list)


def _zero(mode: str) -> bool:
    return set(mode) == {"0"}


def dirty(repo: Path) -> Dirty:
    """What differs between HEAD, the install's index and its work tree (see `Dirty`)."""
    found = Dirty()
    records = iter(git.run(_STATUS, repo).stdout.split(b"\0"))
    for record in records:
        line = record.decode(errors="surrogateescape")
        kind, _, rest = line.partition(" ")
        if kind == "?":
            found.from_disk[rest] = None
        elif kind == "1":
            xy, sub, mode_head, mode_index, mode_disk, _, sha_index, path = rest.split(" ", 7)
            if sub != "N..." or _GITLINK in (mode_head, mode_index, mode_disk):
                found.odd = True
            found.staged = found.staged or xy[0] != "."
            if xy[1] != ".":  # the disk is not what the index holds
                found.entries[path] = None
                if not _zero(mode_disk):
                    found.from_disk[path] = mode_disk
            else:
                found.entries[path] = None if _zero(mode_index) else (mode_index, sha_index)
        elif kind == "u":  # unmerged: "u XY sub m1 m2 m3 mW h1 h2 h3 path"
            found.unmerged.append(rest.split(" ", 9)[-1])
            found.odd = True
        elif line:  # any record this does not read
            found.odd = True
    return found


def _mode_on_disk(repo: Path, path: str, filemode: list[bool]) -> str | None:
    """The mode `git add` gives the untracked file PATH (000000: gone since git looked; None:
    not told here: a folder, or an executable file where core.fileMode is false, whose mode
    is the index's entry's if it has one). core.fileMode is asked once, when it matters."""
    try:
        info = os.lstat(repo / path)
    except (FileNotFoundError, NotADirectoryError):
        return "000000"
    if stat.S_ISLNK(info.st_mode):
        return "120000"
    if not stat.S_ISREG(info.st_mode):
        return None
    if not info.st_mode & stat.S_IXUSR:
        return "100644"
    if not filemode:
        said = git.run(["config", "--type=bool", "--get", "core.fileMode"], repo, check=False)
        filemode.append(said.stdout.strip() != b"false")
    return "100755" if filemode[0] else None


def _hashed(repo: Path, paths: list[str]) -> list[str]:
    """The blob id of each of PATHS' files as `git add` stores it, written to the store."""
    query = "".join(f"{path}\n" for path in paths).encode(errors="surrogateescape")
    answer = git.run(["hash-object", "-w", "--stdin-paths"], repo, stdin=query).stdout.split()
    return [sha.decode() for sha in answer]


def _linked(repo: Path, paths: dict[str, str]) -> dict[str, Entry]:
    """PATHS (symlinks among them) as `git update-index` takes them from the disk, on a
    scratch index: git's own reading of a link (its target, or a file where core.symlinks
    is false)."""
    with scratch_index(repo) as index:
        query = "".join(f"{path}\0" for path in paths).encode(errors="surrogateescape")
        git.run(["update-index", "-z", "--add", "--remove", "--stdin"], repo,
                env=index.env, stdin=query)  # fmt: skip
        taken = index_entries(index)
    return {path: taken.get(path) for path in paths}


def worktree_snapshot(
    repo: Path, head: str, also: Iterable[str] = (), found: Dirty | None = None
) -> tuple[Overlaid, bool] | None:
    """The work tree as a tree object on HEAD's (see the module docstring), and whether the
    install's index differs from HEAD; None when this way does not take it (the caller takes
    git's own). FOUND: what `dirty` said a moment ago, when the caller asked it already."""
    found = dirty(repo) if found is None else found
    for path in also:  # a file patchkeeper wrote is taken even when ignored
        if path not in found.from_disk and os.path.lexists(repo / path):
            found.from_disk[path] = None
    if found.odd or any("\n" in path or path.endswith("/") for path in found.from_disk):
        return None
    filemode: list[bool] = []
    modes: dict[str, str] = {}
    for path, said in found.from_disk.items():
        mode = _mode_on_disk(repo, path, filemode) if said is None else said
        if mode is None:
            return None
        if mode == "000000":
            found.entries[path] = None  # gone since git looked
        else:
            modes[path] = mode
    changes = dict(found.entries)
    if "120000" in modes.values():
        changes.update(_linked(repo, modes))
    elif modes:
        blobs = _hashed(repo, list(modes))
        changes.update(
            (path, (mode, sha)) for (path, mode), sha in zip(modes.items(), blobs, strict=True)
        )
    made = overlay(repo, head, changes)
    return None if made is None else (made, found.staged)
