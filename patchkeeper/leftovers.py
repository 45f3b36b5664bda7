"""What an update leaves behind: find it, classify it by content, restore or drop it safely.

A leftover is a stash entry the updater parked (`hermes-update-autostash-*`, or any entry an
update run added), a git autostash state file (`MERGE_AUTOSTASH`, `rebase-*/autostash`),
unmerged paths, or a set-aside ref of an earlier patchkeeper update whose edits could not all
be restored. Every one except unmerged paths is a commit whose first parent is the commit the
content was made on, so one classifier and one restorer serve them all:

- classify: on a scratch index holding the leftover's files, reverse every patch (any variant)
  that is in it; what remains equal to the base means `patch-content` (safe to drop once the
  patches are back), nothing reversed means `user-content`, anything else `mixed`.
- restore: a 3-way merge with `git merge-tree --write-tree` of the current work tree (as a
  commit on the leftover's base) and the leftover (tracked plus untracked files, as a commit on
  the same base), so the base of the merge is exactly the leftover's base, with no checkout.
  Clean paths are written by the work tree writer (each file old or new, whatever kills us);
  conflicting paths are listed and left alone.
- drop: a backup ref under `refs/patchkeeper/dropped/` first, then the entry goes.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from patchkeeper import git, nextstep
from patchkeeper import journal as jr
from patchkeeper.errors import UserError
from patchkeeper.files import atomic_write
from patchkeeper.install import Install, operation_in_progress
from patchkeeper.outcomes import PatchResult
from patchkeeper.patchset import PatchSet
from patchkeeper.receipts import install_receipts
from patchkeeper.reflog import ReflogEntry, read_reflog
from patchkeeper.scratch import scratch_index
from patchkeeper.worktree_writer import INTERRUPTED_PREFIX, write_trees

HERMES_AUTOSTASH = "hermes-update-autostash-"
KNOWN_STASHES = "stashes.json"  # under the state dir: stash entries an update reported
DROPPED_PREFIX = "refs/patchkeeper/dropped"
AUTOSTASH_FILES = ("MERGE_AUTOSTASH", "rebase-merge/autostash", "rebase-apply/autostash")

PATCH_CONTENT = "patch-content"
USER_CONTENT = "user-content"
MIXED = "mixed"
UNKNOWN = "unknown"  # unmerged paths: only a person can tell

STASH = "stash"
AUTOSTASH_FILE = "autostash-file"
SET_ASIDE = "set-aside"
# An update's refs that hold content for a person: edits that could not be merged back, and
# files that changed while the upstream command ran and were set aside by a rollback.
# The `before` snapshot too, when a run kept it (files changed since were left as they were).
SET_ASIDE_REFS = ("/edits", "/found", "/before")
UNMERGED = "unmerged"

_TOOL_ID = {
    "GIT_AUTHOR_NAME": "patchkeeper",
    "GIT_AUTHOR_EMAIL": "patchkeeper@localhost",
    "GIT_COMMITTER_NAME": "patchkeeper",
    "GIT_COMMITTER_EMAIL": "patchkeeper@localhost",
}


# ---------------------------------------------------------------- commits of trees


def commit_tree(repo: Path, tree: str, parent: str | None, message: str) -> str:
    """A commit object (no branch moves) under patchkeeper's own identity."""
    args = ["commit-tree", tree, "-m", message] + (["-p", parent] if parent else [])
    return git.out(args, repo, env=_TOOL_ID)


def worktree_tree(install: Install, also: Iterable[str] = ()) -> str:
    """The work tree as a tree object: tracked and untracked files, never ignored ones, except
    the paths in ALSO (what patchkeeper wrote: a patch may create a file the install ignores).

    A copy of the install's own index gives `git add -A` valid stat data, so only changed
    files are hashed; the install's index itself is never written.

    The copy keeps the index's own modification time (copy2), and that matters: git trusts
    an entry's cached stat data only when the entry is older than the index file. A file
    changed in the same second the index was written, keeping its size, has the same stat
    data as the cached entry; git reads it again only because the entry is not older than
    the index ("racily clean"). A copy with a new mtime makes every entry look older, so such
    an edit (a patch just written, a user's same-size edit) was silently left out.
    """
    with tempfile.TemporaryDirectory(prefix="patchkeeper-") as tmp:
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


def write_merge(
    install: Install,
    preview: MergePreview,
    *,
    markers: bool = False,
    command: str = "leftovers restore",
) -> list[str]:
    """Write the merged content of every non-conflicting path (worktree_writer.py: each file
    old or new, whatever kills us); COMMAND is what its journal says was writing.

    With MARKERS, conflicting paths are written too, holding git's conflict markers for a
    person to resolve. The work tree holds PREVIEW.ours for these paths (that is how it was
    read), so the diff applies exactly; the install's index is not touched.
    """
    paths = [
        p
        for p in changed_paths(install.path, preview.ours, preview.result)
        if markers or p not in preview.conflicts
    ]
    if paths:
        write_trees(install.path, install.state_dir, command, preview.ours, preview.result, paths)
    return paths


# ---------------------------------------------------------------- leftovers


@dataclass
class Leftover:
    id: str
    kind: str
    label: str  # stash@{n} and message, file path, or ref name
    rev: str | None  # the commit holding the content
    base: str | None  # the commit the content was made on
    untracked: str | None = None  # a stash's untracked-files commit
    created: float | None = None
    files: list[str] = field(default_factory=list)
    classification: str = UNKNOWN
    patches: list[str] = field(default_factory=list)  # patches whose content it holds
    notes: list[str] = field(default_factory=list)

    def age(self, now: float | None = None) -> str:
        if self.created is None:
            return "?"
        seconds = max(0, int((now or time.time()) - self.created))
        for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
            if seconds >= size:
                return f"{seconds // size}{unit}"
        return f"{seconds}s"

    @property
    def backup_ref(self) -> str:
        return f"{DROPPED_PREFIX}/{self.id}"

    def summary(self) -> str:
        held = f" ({', '.join(self.patches)})" if self.patches else ""
        return f"{self.id} {self.kind} {self.classification}{held}: {self.label}"

    def restore_command(
        self, install: Install, *, markers: bool = False, patches: Path | None = None
    ) -> str:
        """The command that restores this leftover, shell-quoted, ready to paste."""
        flags = ["--markers"] if markers else []
        return nextstep.command(
            "leftovers", "restore", self.id, *flags, install=install.path, patches=patches
        )


def _stash_entries(install: Install) -> list[ReflogEntry]:
    """The stash list, newest first (read from the stash reflog; no git process)."""
    return read_reflog(install.git_dir, "refs/stash")


def stash_top(install: Install) -> str | None:
    entries = _stash_entries(install)
    return entries[0].sha if entries else None


def new_stash_shas(install: Install, top: str | None, since: float) -> set[str]:
    """Entries pushed after TOP was recorded: the stash reflog walked down to TOP.

    If TOP is no longer in the reflog (something dropped it), entries made since SINCE count.
    """
    entries = _stash_entries(install)
    shas = [entry.sha for entry in entries]
    if top is None:
        return set(shas)
    if top in shas:
        return set(shas[: shas.index(top)])
    return {entry.sha for entry in entries if entry.time >= since - 1}


def known_stashes(install: Install) -> set[str]:
    """Stash entries an update reported as leftovers: they stay leftovers while they exist,
    whatever their message (another updater's, a plain `git stash`)."""
    try:
        data = json.loads((install.state_dir / KNOWN_STASHES).read_text(encoding="utf-8"))
        return {entry["sha"] for entry in data["stashes"]}
    except FileNotFoundError:
        return set()
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UserError(
            f"{install.state_dir / KNOWN_STASHES}: unreadable ({exc}); stash entries an update "
            "reported may not be listed: see `git stash list`, then remove the file"
        ) from None


def remember_stashes(install: Install, items: Iterable[Leftover], run_id: str) -> None:
    """Record the stash entries among ITEMS so that `leftovers` and `status` list them after
    this run too; entries no longer in the stash are forgotten."""
    entries = {entry.sha: entry.message for entry in _stash_entries(install)}
    known = known_stashes(install) | {i.rev for i in items if i.kind == STASH and i.rev}
    kept = [{"sha": sha, "message": entries[sha], "run": run_id} for sha in sorted(known)
            if sha in entries]  # fmt: skip
    path = install.state_dir / KNOWN_STASHES
    if kept or path.exists():
        atomic_write(path, json.dumps({"stashes": kept}, indent=2).encode() + b"\n")


def _optional_rev(repo: Path, rev: str) -> str | None:
    return git.rev_parse(repo, rev)


def _leftover_files(repo: Path, base: str, rev: str, untracked: str | None) -> list[str]:
    files = changed_paths(repo, base, rev)
    if untracked:
        raw = git.run(["ls-tree", "-r", "--name-only", "-z", untracked], repo).stdout
        files += [p for p in raw.decode(errors="surrogateescape").split("\0") if p]
    return sorted(set(files))


def _content_leftover(
    repo: Path, *, kind: str, label: str, rev: str, created: float | None, untracked: bool
) -> Leftover | None:
    base = _optional_rev(repo, f"{rev}^1")
    if base is None:
        return None
    extra = _optional_rev(repo, f"{rev}^3") if untracked else None
    leftover = Leftover(rev[:10], kind, label, rev, base, extra, created)
    leftover.files = _leftover_files(repo, base, rev, extra)
    return leftover


def _stash_leftovers(install: Install, wanted: set[str]) -> list[Leftover]:
    repo = install.path
    found = []
    for entry in _stash_entries(install):
        selector, sha, stamp, message = entry.selector, entry.sha, entry.time, entry.message
        if sha in wanted or HERMES_AUTOSTASH in message:
            leftover = _content_leftover(
                repo,
                kind=STASH,
                label=f"{selector} {message}",
                rev=sha,
                created=stamp,
                untracked=True,
            )
            if leftover:
                found.append(leftover)
    return found


def _autostash_leftovers(install: Install) -> list[Leftover]:
    found = []
    for name in AUTOSTASH_FILES:
        path = install.git_dir / name
        if not path.is_file():
            continue
        sha = git.rev_parse(install.path, path.read_text().strip())
        if sha is None:
            continue
        leftover = _content_leftover(
            install.path,
            kind=AUTOSTASH_FILE,
            label=str(path),
            rev=sha,
            created=path.stat().st_mtime,
            untracked=True,
        )
        if leftover:
            found.append(leftover)
    return found


def _unmerged_leftover(install: Install) -> list[Leftover]:
    raw = git.run(["ls-files", "-u", "-z"], install.path).stdout.decode(errors="surrogateescape")
    files = sorted({entry.split("\t", 1)[1] for entry in raw.split("\0") if "\t" in entry})
    if not files:
        return []
    leftover = Leftover("unmerged", UNMERGED, "unmerged paths in the index", None, None)
    leftover.files = files
    leftover.notes.append("resolve with git (edit, then `git add` or `git checkout --`)")
    return [leftover]


def _set_aside_leftovers(
    repo: Path, exclude_run: str | None, only_run: str | None = None
) -> list[Leftover]:
    """Refs of finished updates that hold content for a person, and the old content of files
    an interrupted tree write found changed since (worktree_writer.py); ONLY_RUN: that run's
    refs alone."""
    raw = git.out(
        [
            "for-each-ref",
            "--format=%(refname)%00%(objectname)%00%(creatordate:unix)",
            f"{jr.REF_PREFIX}/",
            f"{INTERRUPTED_PREFIX}/",
        ],
        repo,
    )
    found = []
    for line in raw.splitlines():
        ref, sha, stamp = line.split("\0")
        run_id = ref.removeprefix(f"{jr.REF_PREFIX}/").rsplit("/", 1)[0]
        ours = ref.startswith(INTERRUPTED_PREFIX) or ref.endswith(SET_ASIDE_REFS)
        if not ours or run_id == exclude_run or only_run not in (None, run_id):
            continue
        leftover = _content_leftover(
            repo, kind=SET_ASIDE, label=ref, rev=sha, created=float(stamp), untracked=False
        )
        if leftover:
            found.append(leftover)
    return found


def classify_content(repo: Path, leftover: Leftover, patch_set: PatchSet) -> None:
    """Set LEFTOVER's classification and the patches whose content it holds."""
    assert leftover.rev and leftover.base
    with scratch_index(repo, private_objects=True) as index:  # status adds no object
        index.load_ref(leftover.base, leftover.files)
        base_tree = index.write_tree()
        index.load_ref(leftover.rev, leftover.files)
        if leftover.untracked:
            index.load_ref(leftover.untracked, leftover.files, overlay=True)
        held = []
        for patch in reversed(patch_set.patches):
            for variant in patch.variants:
                if index.apply(variant.diff, "--reverse").returncode == 0:
                    held.append(patch.name)
                    break
        rest = index.write_tree()
    leftover.patches = list(reversed(held))
    if not held:
        leftover.classification = USER_CONTENT
    elif rest == base_tree:
        leftover.classification = PATCH_CONTENT
    else:
        leftover.classification = MIXED


def _note_parked_receipts(install: Install, leftovers: list[Leftover]) -> None:
    """A receipt that says `parked` and names a stash that is still there: say so on it.

    A receipt that could not be read is named on every stash leftover: it may be the one that
    parked it.
    """
    stashes = [item for item in leftovers if item.kind == STASH and item.rev]
    if not stashes:
        return
    receipts = install_receipts(install.path)
    for leftover in stashes:
        assert leftover.rev
        notes = [
            f"hermes update receipt {receipt.path.name} says parked"
            for receipt in receipts.parked()
            if receipt.names_commit(leftover.rev)
        ]
        notes += [skipped.note for skipped in receipts.skipped]
        leftover.notes.extend(note for note in notes if note not in leftover.notes)


def find_leftovers(
    install: Install,
    patch_set: PatchSet,
    *,
    new_stashes: set[str] = frozenset(),  # type: ignore[assignment]
    exclude_run: str | None = None,
) -> list[Leftover]:
    """Everything left behind now, each classified by content.

    The refs of an unfinished update are not leftovers: `recover` finishes or undoes that run.
    """
    if exclude_run is None and (unfinished := jr.load(install.state_dir)) is not None:
        exclude_run = unfinished.id
    found = _stash_leftovers(install, set(new_stashes) | known_stashes(install))
    found += _autostash_leftovers(install)
    found += _set_aside_leftovers(install.path, exclude_run)
    for leftover in found:
        classify_content(install.path, leftover, patch_set)
    _note_parked_receipts(install, found)
    return found + _unmerged_leftover(install)


def run_leftovers(install: Install, patch_set: PatchSet, run_id: str) -> list[Leftover]:
    """What the finished update RUN_ID leaves for a person (its refs that still hold content),
    as `patchkeeper leftovers` will list it, so the update's report names it too."""
    found = _set_aside_leftovers(install.path, None, only_run=run_id)
    for leftover in found:
        classify_content(install.path, leftover, patch_set)
    return found


def note_leftovers(results: Iterable[PatchResult], leftovers: list[Leftover]) -> None:
    """On each patch that is not in place, name the leftovers that hold its content."""
    for result in results:
        if result.in_place:
            continue
        for item in leftovers:
            if result.name in item.patches:
                result.notes.append(
                    f"{item.label} holds this patch's content (`patchkeeper leftovers show "
                    f"{item.id}`)"
                )


def find_by_id(install: Install, patch_set: PatchSet, wanted: str) -> Leftover:
    """The leftover whose id (or commit) starts with WANTED; a one-line error otherwise."""
    matches = [
        item
        for item in find_leftovers(install, patch_set)
        if item.id == wanted or (item.rev and len(wanted) >= 4 and item.rev.startswith(wanted))
    ]
    if not matches:
        raise UserError(f"{install.path}: no leftover {wanted!r} (see `patchkeeper leftovers`)")
    if len(matches) > 1:
        raise UserError(f"{install.path}: {wanted!r} names several leftovers; give more digits")
    return matches[0]


# ---------------------------------------------------------------- show, restore, drop


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
            (e.selector for e in _stash_entries(install) if e.sha == leftover.rev), None
        )
        if selector is not None:
            _drop_stash_entry(install.path, selector, leftover.rev)
    elif leftover.kind == SET_ASIDE:
        git.run(["update-ref", "-d", leftover.label, leftover.rev], install.path)
    else:
        Path(leftover.label).unlink(missing_ok=True)
    return backup
