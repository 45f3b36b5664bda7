"""What an update leaves behind: find each leftover and classify it by content.

A leftover is a stash entry the updater parked (`hermes-update-autostash-*`, or any entry an
update run added), a git autostash state file (`MERGE_AUTOSTASH`, `rebase-*/autostash`),
unmerged paths, or a set-aside ref of an earlier patchkeeper update whose edits could not all
be restored. Every one except unmerged paths is a commit whose first parent is the commit the
content was made on, so one classifier and one restorer (heal.py) serve them all:

- classify: on a scratch index holding the leftover's files, reverse every patch (any variant)
  that is in it; what remains equal to the base means `patch-content` (safe to drop once the
  patches are back), nothing reversed means `user-content`, anything else `mixed`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from patchkeeper.install.checkout.install import Install
from patchkeeper.install.plumbing import git
from patchkeeper.install.records import update_journal as jr
from patchkeeper.install.system.durable import atomic_write
from patchkeeper.install.writer.settle import INTERRUPTED_PREFIX
from patchkeeper.leftovers.reflog import ReflogEntry, read_reflog
from patchkeeper.model import nextstep
from patchkeeper.model.errors import UserError
from patchkeeper.model.outcomes import PatchResult
from patchkeeper.patchset.model import PatchSet

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


@dataclass
class Leftover:
    """Something an update left behind: a parked stash, an autostash file, unmerged paths, a ref of
    edits."""

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


def stash_entries(install: Install) -> list[ReflogEntry]:
    """The stash list, newest first (read from the stash reflog; no git process)."""
    return read_reflog(install.git_dir, "refs/stash")


def stash_top(install: Install) -> str | None:
    entries = stash_entries(install)
    return entries[0].sha if entries else None


def new_stash_shas(install: Install, top: str | None, since: float) -> set[str]:
    """Entries pushed after TOP was recorded: the stash reflog walked down to TOP.

    If TOP is no longer in the reflog (something dropped it), entries made since SINCE count.
    """
    entries = stash_entries(install)
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
    entries = {entry.sha: entry.message for entry in stash_entries(install)}
    known = known_stashes(install) | {i.rev for i in items if i.kind == STASH and i.rev}
    kept = [{"sha": sha, "message": entries[sha], "run": run_id} for sha in sorted(known)
            if sha in entries]  # fmt: skip
    path = install.state_dir / KNOWN_STASHES
    if kept or path.exists():
        atomic_write(path, json.dumps({"stashes": kept}, indent=2).encode() + b"\n")


def _optional_rev(repo: Path, rev: str) -> str | None:
    return git.rev_parse(repo, rev)


def _leftover_files(repo: Path, base: str, rev: str, untracked: str | None) -> list[str]:
    from patchkeeper.install.checkout.tree_objects import changed_paths  # a leftover: rare

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
    for entry in stash_entries(install):
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
    an interrupted tree write found changed since (settle.py); ONLY_RUN: that run's
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
    from patchkeeper.install.plumbing.scratch_index import scratch_index  # a leftover: rare

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
    from patchkeeper.leftovers.receipts import install_receipts  # a stash found: rare

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
    unmerged: bool = True,
    set_aside: list[Leftover] | None = None,
) -> list[Leftover]:
    """Everything left behind now, each classified by content; UNMERGED False: the caller
    refused unmerged paths a moment ago (`refuse_if_busy_with_git`), so git is not asked.
    SET_ASIDE: the refs of earlier updates as this process found them a moment ago (no run
    but this one, which holds the install lock, writes those), so git is not asked again.

    The refs of an unfinished update are not leftovers: `recover` finishes or undoes that run.
    """
    if exclude_run is None and (unfinished := jr.load(install.state_dir)) is not None:
        exclude_run = unfinished.id
    found = _stash_leftovers(install, set(new_stashes) | known_stashes(install))
    found += _autostash_leftovers(install)
    for leftover in found:
        classify_content(install.path, leftover, patch_set)
    if set_aside is None:
        set_aside = _set_aside_leftovers(install.path, exclude_run)
        for leftover in set_aside:
            classify_content(install.path, leftover, patch_set)
    found += set_aside
    _note_parked_receipts(install, found)
    return found + (_unmerged_leftover(install) if unmerged else [])


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
