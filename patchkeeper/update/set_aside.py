"""Phase 3: snapshot the work tree in a `before` ref, take patchkeeper's patches out, keep the
user's own edits in an `edits` ref, and leave a clean checkout for the updater."""

from __future__ import annotations

import shutil

from patchkeeper.engine.diffs import split_hunks
from patchkeeper.install.checkout import tree_objects as trees
from patchkeeper.install.plumbing import git
from patchkeeper.install.plumbing.meanwhile import meanwhile
from patchkeeper.install.plumbing.scratch_index import (
    ScratchIndex,
    index_entries,
    plain_index,
    scratch_index,
)
from patchkeeper.install.plumbing.tree_diff import list_tree_diff, reversed_diff
from patchkeeper.install.plumbing.tree_overlay import overlay
from patchkeeper.install.plumbing.work_tree_snapshot import dirty
from patchkeeper.install.records import update_journal as jr
from patchkeeper.install.records.applied import (
    APPLIED_FILE,
    WRITTEN_DIR,
    load_applied,
    save_applied,
    written_diff,
)
from patchkeeper.install.writer.write import write_trees
from patchkeeper.model import outcomes as oc
from patchkeeper.model.errors import UserError
from patchkeeper.update.context import RunContext
from patchkeeper.update.rollback import STATE_BACKUP
from patchkeeper.update.tree_facts import Entry, modes_of_yours, tree_changes, written_exactly


def survey(ctx: RunContext) -> None:
    """Before phase 3: what differs from HEAD (the snapshot's one `git status`), refusing
    unmerged paths as the lock's refusals would have (it leaves them to this: the one
    listing serves both). Nothing is changed yet, so a refusal leaves nothing to recover."""
    found = dirty(ctx.install.path)
    if found.unmerged:
        reason = f"the install has unmerged paths ({found.unmerged[0]})"
        raise UserError(f"{ctx.install.path}: {reason}; finish or abort it first")
    ctx.dirty = found


def set_aside(ctx: RunContext) -> str:
    """Phase 3: snapshot the tree, take the patches out, keep the user's edits in a ref."""
    head, repo = ctx.journal.old_head, ctx.install.path
    records = load_applied(ctx.state_dir)
    found, ctx.dirty = ctx.dirty, None  # the survey's answer, used once
    state = trees.worktree_state(ctx.install, _recorded_paths(ctx, records), head, found)
    snapshot, index_dirty = state.tree, state.staged
    head_tree = state.head_tree or trees.tree_of(repo, head)
    if snapshot == head_tree and not records and not index_dirty:
        return "the tree is clean: nothing to set aside"
    # Where the snapshot is not HEAD's tree: one diff tells what the records made of each
    # path, and, read from the other side, what the tree write below changes. A snapshot
    # made from the dirty paths says it; else it is asked while the snapshot is kept.
    listed_of = None if state.listed is not None else meanwhile(
        list_tree_diff, repo, head_tree, snapshot
    )  # fmt: skip
    _backup_state(ctx)
    _keep(ctx, "before", snapshot, f"patchkeeper: work tree before update {ctx.journal.id}")
    jr.checkpoint("3.1")
    listed = state.listed if listed_of is None else listed_of()
    edits_tree = _strip_patches(ctx, snapshot, head_tree, records, tree_changes(listed))
    if edits_tree != head_tree:
        message = f"patchkeeper: your edits, set aside by update {ctx.journal.id}"
        _keep(ctx, "edits", edits_tree, message)
    jr.checkpoint("3.2")
    save_applied(ctx.state_dir, {}, {})
    jr.checkpoint("3.3")
    back_to_head = reversed_diff(listed)  # no second tree diff
    write_trees(repo, ctx.state_dir, "update (set-aside)", snapshot, head_tree, listed=back_to_head)
    jr.checkpoint("3.4")
    if index_dirty or not plain_index(ctx.install.git_dir / "index"):
        git.run(["reset", "-q"], ctx.install.path)  # else the index is HEAD's already
    unchanged = edits_tree == head_tree
    changed = [] if unchanged else trees.changed_paths(repo, head_tree, edits_tree)
    kept = f"your edits ({len(changed)} file(s)) in {ctx.journal.edits_ref}"
    return f"took out {len(records)} patch(es); " + (kept if changed else "no edits of yours")


def _recorded_paths(ctx: RunContext, records: dict) -> set[str]:
    """The files patchkeeper's records created: in the snapshot even when ignored (a file
    that was there before is tracked, and `add -A` takes it anyway)."""
    return {
        path
        for record in records.values()
        for path, header, _ in split_hunks(written_diff(ctx.state_dir, record))
        if b"\nnew file mode " in header
    }


def _keep(ctx: RunContext, what: str, tree: str, message: str) -> None:
    """TREE as a commit on the old HEAD, under the run's ref WHAT, named in the journal."""
    commit = trees.commit_tree(ctx.install.path, tree, ctx.journal.old_head, message)
    ref = ctx.journal.ref(what)
    git.run(["update-ref", ref, commit], ctx.install.path)
    setattr(ctx.journal, f"{what}_ref", ref)
    jr.save(ctx.state_dir, ctx.journal)


def _backup_state(ctx: RunContext) -> None:
    target = ctx.journal.run_dir(ctx.state_dir) / STATE_BACKUP
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    if (ctx.state_dir / APPLIED_FILE).is_file():
        shutil.copy2(ctx.state_dir / APPLIED_FILE, target / APPLIED_FILE)
    if (ctx.state_dir / WRITTEN_DIR).is_dir():
        shutil.copytree(ctx.state_dir / WRITTEN_DIR, target / WRITTEN_DIR)


def _strip_patches(
    ctx: RunContext,
    snapshot: str,
    head_tree: str,
    records: dict,
    changed: dict[str, tuple[Entry, Entry]],
) -> str:
    """The snapshot without what patchkeeper wrote (latest first); drifted content stays.
    CHANGED: the snapshot's entries where it is not HEAD's tree."""
    order = [p.name for p in ctx.ws.patch_set.patches]
    order += sorted(set(records) - set(order))
    not_reversed: dict[str, set[str]] = {}
    names = [name for name in reversed(order) if name in records]
    diffs = {name: written_diff(ctx.state_dir, records[name]) for name in names}
    if not names:
        return snapshot  # nothing of patchkeeper's to take out
    written = all(records[name].outcome in oc.WRITES for name in names)
    sections = [section for name in names for section in split_hunks(diffs[name])]
    yours = modes_of_yours(sections, changed)
    if not yours and _only_patches(ctx, snapshot, head_tree, sections, diffs, changed, written):
        return head_tree  # the snapshot differs from HEAD on the records' paths alone
    paths = sorted({path for path, _, _ in sections})
    renamed = any(b"\nrename from " in header or b"\ncopy from " in header
                  for _, header, _ in sections)  # fmt: skip
    with scratch_index(ctx.install.path) as index:
        if renamed:  # a path the sections do not name takes part: the whole snapshot
            index.read_tree(snapshot)
        else:  # the records' paths alone, put back into the snapshot below
            index.load_ref(snapshot, paths)
        # All in one `git apply` (latest first); one by one only when that fails.
        whole = b"".join(diffs[name] for name in names)
        if not all(d.endswith(b"\n") for d in diffs.values()) or (
            whole and index.apply(whole, "--reverse").returncode != 0
        ):
            for name in names:
                if index.apply(diffs[name], "--reverse").returncode != 0:
                    not_reversed[name] = {path for path, _, _ in split_hunks(diffs[name])}
        for executable in (True, False):  # your chmod stays yours: the apply undid it
            index.set_executable(
                [path for path, mode in yours.items() if (mode == "100755") == executable],
                executable,
            )
        edits_tree = index.write_tree() if renamed else _put_back(ctx, snapshot, paths, index)
    changed = set(trees.changed_paths(ctx.install.path, head_tree, edits_tree))
    for name, files in not_reversed.items():
        if files & changed:
            shown = ", ".join(sorted(files & changed))
            ctx.report.notes.append(
                f"{name} was changed by hand since it was applied ({shown}): kept with your edits"
            )
        else:
            ctx.report.notes.append(f"{name} was recorded but is no longer in the tree")
    return edits_tree


def _put_back(ctx: RunContext, snapshot: str, paths: list[str], index: ScratchIndex) -> str:
    """The snapshot with PATHS as INDEX (which holds those paths alone) holds them, absent
    where it holds none: the folders on their way written again, or, when that cannot be
    done (tree_overlay.py), the whole snapshot read into an index."""
    entries = index_entries(index)
    made = overlay(ctx.install.path, snapshot, {path: entries.get(path) for path in paths})
    if made is not None:
        return made.tree
    zero = "0" * len(snapshot)
    lines = "".join(
        f"{entries[path][0]} {entries[path][1]}\t{path}\0" if path in entries
        else f"0 {zero}\t{path}\0"
        for path in paths
    )  # fmt: skip
    with scratch_index(ctx.install.path) as whole:
        whole.read_tree(snapshot)
        whole.add_entries(lines.encode(errors="surrogateescape"))
        return whole.write_tree()


def _only_patches(
    ctx: RunContext,
    snapshot: str,
    head_tree: str,
    sections: list[tuple[str, bytes, list[bytes]]],
    diffs: dict[str, bytes],
    changed: dict[str, tuple[Entry, Entry]],
    written: bool,
) -> bool:
    """Whether the snapshot is HEAD plus exactly what the records wrote, told from their
    paths alone (no whole-tree index): taking them out then leaves HEAD's tree. WRITTEN:
    every diff is one patchkeeper made (git's own, whose blob ids are the truth), so the
    blob ids alone can tell; an adopted patch file's diff is applied. SECTIONS: the diffs'
    file sections, latest first; CHANGED: the snapshot's entries where it is not HEAD's tree."""
    paths = sorted({path for path, _, _ in sections})
    if not paths or not all(diff.endswith(b"\n") for diff in diffs.values()):
        return False
    if not set(changed) <= set(paths):
        return False
    if written and written_exactly(sections, changed):
        return True  # each file is the blob its record wrote, on HEAD's blob: no apply
    with scratch_index(ctx.install.path, private_objects=True) as index:
        index.load_ref(snapshot, paths)
        whole = b"".join(diffs.values())
        return index.apply(whole, "--reverse").returncode == 0 and index.same_as(head_tree, paths)
