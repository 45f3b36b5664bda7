"""Trees and commits made from the install without touching its index, HEAD or work tree: the
work tree as a tree object, a commit under patchkeeper's own identity, a merge previewed in
memory."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from patchkeeper.install.checkout.install import Install
from patchkeeper.install.plumbing import git
from patchkeeper.install.plumbing.tree_diff import Listed
from patchkeeper.install.plumbing.work_tree_snapshot import Dirty, worktree_snapshot
from patchkeeper.install.system.temp_folders import temporary_folder

_TOOL_ID = {
    "GIT_AUTHOR_NAME": "patchkeeper",
    "GIT_AUTHOR_EMAIL": "patchkeeper@localhost",
    "GIT_COMMITTER_NAME": "patchkeeper",
    "GIT_COMMITTER_EMAIL": "patchkeeper@localhost",
}


def commit_tree(repo: Path, tree: str, parent: str | None, message: str) -> str:
    """A commit object (no branch moves) under patchkeeper's own identity."""
    args = ["commit-tree", tree, "-m", message] + (["-p", parent] if parent else [])
    return git.out(args, repo, env=_TOOL_ID)


def worktree_tree(install: Install, also: Iterable[str] = (), head: str | None = None) -> str:
    """The work tree as a tree object: tracked and untracked files, never ignored ones, except
    the paths in ALSO (what patchkeeper wrote: a patch may create a file the install ignores).
    HEAD: the install's HEAD commit, when the caller knows it."""
    return worktree_state(install, also, head).tree


@dataclass(frozen=True)
class WorktreeState:
    """The work tree as a tree object (TREE), and whether the install's index differs from
    HEAD (STAGED). Made from HEAD's tree (HEAD_TREE) by the dirty paths alone, LISTED says
    what differs between the two (as `tree_diff.list_tree_diff` would); both None when
    the whole tree was read instead."""

    tree: str
    staged: bool
    head_tree: str | None = None
    listed: list[Listed] | None = None


def worktree_state(
    install: Install, also: Iterable[str] = (), head: str | None = None, found: Dirty | None = None
) -> WorktreeState:
    """The work tree as a tree object (`worktree_tree`), and how the index stands: HEAD's
    tree with the dirty paths alone taken from the disk (plumbing/work_tree_snapshot.py), or,
    where that does not take it, git's own `add -A` of the whole tree. FOUND: `dirty`'s
    answer there, when the caller asked it a moment ago."""
    also = list(also)
    head = head or git.rev_parse(install.path, "HEAD")
    taken = None if head is None else worktree_snapshot(install.path, head, also, found)
    if taken is not None:
        made, staged = taken
        return WorktreeState(made.tree, staged, made.base, made.listed)
    staged = git.run(["diff", "--cached", "--quiet"], install.path, check=False)
    return WorktreeState(_whole_tree(install, also), staged.returncode != 0)


def _whole_tree(install: Install, also: list[str]) -> str:
    """The work tree as `git add -A` takes it, every path of it.

    A copy of the install's own index gives `git add -A` valid stat data, so only changed
    files are hashed; the install's index itself is never written.

    The copy keeps the index's own modification time (copy2), and that matters: git trusts
    an entry's cached stat data only when the entry is older than the index file. A file
    changed in the same second the index was written, keeping its size, has the same stat
    data as the cached entry; git reads it again only because the entry is not older than
    the index ("racily clean"). A copy with a new mtime makes every entry look older, so such
    an edit (a patch just written, a user's same-size edit) was silently left out.
    """
    with temporary_folder() as tmp:
        index_file = Path(tmp) / "index"
        env = {"GIT_INDEX_FILE": str(index_file)}
        if (install.git_dir / "index").is_file():
            shutil.copy2(install.git_dir / "index", index_file)
        elif git.rev_parse(install.path, "HEAD"):
            git.run(["read-tree", "HEAD"], install.path, env=env)
        git.run(["add", "-A", "--", "."], install.path, env=env)
        if present := sorted({path for path in also if os.path.lexists(install.path / path)}):
            git.run(
                ["add", "--force", "--pathspec-from-file=-", "--pathspec-file-nul"],
                install.path,
                env={**env, "GIT_LITERAL_PATHSPECS": "1"},
                stdin="\0".join(present).encode(errors="surrogateescape"),
            )
        return git.out(["write-tree"], install.path, env=env)


def tree_of(repo: Path, rev: str) -> str:
    return git.out(["rev-parse", f"{rev}^{{tree}}"], repo)


def changed_paths(repo: Path, old: str, new: str) -> list[str]:
    raw = git.run(["diff", "--name-only", "--no-renames", "-z", old, new], repo).stdout
    return [p for p in raw.decode(errors="surrogateescape").split("\0") if p]


@dataclass(frozen=True)
class MergePreview:
    """A merge made in memory: its result tree and the paths that conflict."""

    ours: str  # tree
    result: str  # tree; conflicted paths in it hold conflict markers
    conflicts: list[str]

    @property
    def clean(self) -> bool:
        return not self.conflicts


def merge_preview(repo: Path, base: str, ours_tree: str, theirs_tree: str) -> MergePreview:
    """3-way merge of two trees on BASE, in git's object store only (no files touched).

    git 2.39's merge-tree has no --merge-base: both sides become commits whose only parent is
    BASE, which makes BASE their merge base exactly.
    """
    ours = commit_tree(repo, ours_tree, base, "patchkeeper: work tree")
    theirs = commit_tree(repo, theirs_tree, base, "patchkeeper: to restore")
    proc = git.run(
        ["merge-tree", "--write-tree", "--name-only", "-z", "--no-messages", ours, theirs],
        repo,
        check=False,
    )
    if proc.returncode not in (0, 1):
        git.run(["merge-tree", "--write-tree", ours, theirs], repo)  # raises with git's reason
    fields = proc.stdout.decode(errors="surrogateescape").split("\0")
    conflicts: list[str] = []
    for name in fields[1:]:
        if not name:
            break
        if name not in conflicts:
            conflicts.append(name)
    return MergePreview(ours_tree, fields[0].strip(), conflicts)


