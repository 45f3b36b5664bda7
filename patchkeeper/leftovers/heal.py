"""Heal a leftover: preview and restore its content onto the work tree, keep a backup ref first,
or drop it; each with the command that undoes it.

- restore: a 3-way merge with `git merge-tree --write-tree` of the current work tree (as a
  commit on the leftover's base) and the leftover (tracked plus untracked files, as a commit on
  the same base), so the base of the merge is exactly the leftover's base, with no checkout.
  Clean paths are written by the work tree writer (each file old or new, whatever kills us);
  conflicting paths are listed and left alone.
- drop: a backup ref under `refs/patchkeeper/dropped/` first, then the entry goes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from patchkeeper.install.checkout.install import Install, operation_in_progress
from patchkeeper.install.checkout.tree_objects import (
    MergePreview,
    merge_preview,
    tree_of,
    worktree_tree,
)
from patchkeeper.install.plumbing import git
from patchkeeper.install.plumbing.scratch_index import scratch_index
from patchkeeper.install.writer.write import write_merge
from patchkeeper.leftovers.find import (
    AUTOSTASH_FILE,
    SET_ASIDE,
    STASH,
    UNMERGED,
    Leftover,
    stash_entries,
)
from patchkeeper.model import nextstep
from patchkeeper.model.errors import UserError


def content_tree(repo: Path, leftover: Leftover) -> str:
    """The leftover's work tree as one tree: tracked content plus its untracked files."""
    assert leftover.rev
    if not leftover.untracked:
        return tree_of(repo, leftover.rev)
    with scratch_index(repo) as index:
        index.load_ref(leftover.rev, [])
        index.load_ref(leftover.untracked, [], overlay=True)
        return index.write_tree()


def leftover_diff(repo: Path, leftover: Leftover) -> bytes:
    if leftover.kind == UNMERGED:
        return git.run(["diff"], repo).stdout
    assert leftover.base
    return git.run(
        ["diff", "--binary", "--no-renames", leftover.base, content_tree(repo, leftover)], repo
    ).stdout


def preview_restore(install: Install, leftover: Leftover) -> MergePreview:
    if leftover.kind == UNMERGED or not leftover.base:
        raise UserError(f"{install.path}: unmerged paths are resolved with git, not restored")
    theirs = content_tree(install.path, leftover)
    return merge_preview(install.path, leftover.base, worktree_tree(install), theirs)


def save_backup(repo: Path, leftover: Leftover) -> str:
    assert leftover.rev
    git.run(
        [
            "update-ref",
            "-m",
            f"patchkeeper: backup of {leftover.label}",
            leftover.backup_ref,
            leftover.rev,
        ],
        repo,
    )
    return leftover.backup_ref


def undo_command(install: Install, leftover: Leftover) -> str:
    """The one command that puts a dropped leftover back where it was."""
    where = ("git", "-C", install.path)  # every word shell-quoted: a message may hold $(...)
    if leftover.kind == STASH:
        message = leftover.label.split(" ", 1)[-1]
        return nextstep.shell(*where, "stash", "store", "-m", message, leftover.backup_ref)
    if leftover.kind == SET_ASIDE:
        return nextstep.shell(*where, "update-ref", leftover.label, leftover.backup_ref)
    read = nextstep.shell(*where, "rev-parse", leftover.backup_ref)
    return f"{read} > {nextstep.shell(leftover.label)}"


def _drop_stash_entry(repo: Path, selector: str, sha: str) -> None:
    """Drop SELECTOR, which was SHA a moment ago; a stash pushed in between shifts the
    numbers, so what was dropped is checked, and put back if it was another entry."""
    said = git.out(["stash", "drop", selector], repo)
    dropped = re.search(r"\(([0-9a-f]{40})\)", said)
    if dropped and dropped.group(1) != sha:
        git.run(["stash", "store", "-m", "put back by patchkeeper", dropped.group(1)], repo)
        raise UserError(f"{repo}: the stash changed while dropping {sha[:10]}; nothing was lost, "
                        "run the command again")  # fmt: skip


@dataclass(frozen=True)
class RestoreOutcome:
    """What restoring a leftover into the work tree did."""

    clean: bool
    written: list[str]
    conflicts: list[str]
    backup_ref: str | None  # set when the leftover was retired after a clean restore


def restore(install: Install, leftover: Leftover, *, markers: bool = False) -> RestoreOutcome:
    """Merge LEFTOVER into the work tree only when the 3-way merge is clean, then retire it
    (after a backup). With MARKERS a conflicting merge is written too, with conflict markers,
    and the leftover is kept until whoever resolves them drops it."""
    preview = preview_restore(install, leftover)
    written = write_merge(install, preview, markers=markers) if preview.clean or markers else []
    backup = drop(install, leftover) if preview.clean else None
    return RestoreOutcome(preview.clean, written, list(preview.conflicts), backup)


def drop(install: Install, leftover: Leftover) -> str:
    """Save a backup ref, then remove the leftover. Returns the backup ref."""
    if leftover.kind == UNMERGED or not leftover.rev:
        raise UserError(f"{install.path}: unmerged paths are resolved with git, not dropped")
    if leftover.kind == AUTOSTASH_FILE and operation_in_progress(install):
        raise UserError(
            f"{leftover.label}: belongs to an operation in progress; finish or abort it first"
        )
    backup = save_backup(install.path, leftover)
    if leftover.kind == STASH:
        selector = next(
            (e.selector for e in stash_entries(install) if e.sha == leftover.rev), None
        )
        if selector is not None:
            _drop_stash_entry(install.path, selector, leftover.rev)
    elif leftover.kind == SET_ASIDE:
        git.run(["update-ref", "-d", leftover.label, leftover.rev], install.path)
    else:
        Path(leftover.label).unlink(missing_ok=True)
    return backup
