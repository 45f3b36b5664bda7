"""Put the work tree back exactly as it was before an update (the `before` snapshot).

Two situations need it. Before the upstream command ran, only patchkeeper (and, after a crash,
the operator) changed the tree: a 3-way merge of the tree now and the snapshot on the old HEAD
puts back what patchkeeper took out and keeps what the operator wrote since. Once the upstream
command ran and did not update (it failed, timed out, was killed, or its merge was given up),
it may have left half a checkout: files of the new release written, files of the old one
deleted. Those are recognised by content: a path that changed since the old HEAD and now holds
exactly what a release the updater fetched holds there (origin's branches, FETCH_HEAD) is the
checkout's, and is put back to the old HEAD's content before the same 3-way merge. Anything
else that changed is nobody's we know (a file cut off mid-write, something the updater
generated, an edit made after a crash). In the update's own run (EXACT: patchkeeper held the
install all along) it is set aside in a `found` ref, listed by `leftovers`, and the tree
becomes the snapshot exactly; when `recover` resumes a run later it is kept in place, and
named, since the operator may have written it after the crash.

The merge is computed in git's object store (merge-tree) and written by the work tree writer
(writer/write.py: each file old or new, whatever kills us); a
path where the snapshot and a later change conflict is left as it is, and the snapshot ref is
kept so its content stays reachable.

Whether a run goes back is decided here too, at the two moments it can be: `recover` before
the upstream command started (`never_started`), and phase 6 after it ran (`did_not_happen`).
A rule about rolling back (how old a run may be, what else must hold) goes into these two.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from patchkeeper.install.checkout import tree_objects as trees
from patchkeeper.install.checkout.install import Install
from patchkeeper.install.plumbing import git
from patchkeeper.install.records import update_journal as jr
from patchkeeper.install.records.applied import APPLIED_FILE, WRITTEN_DIR
from patchkeeper.install.system.temp_folders import temporary_folder
from patchkeeper.install.writer.write import write_merge, write_trees

ROLL_BACK = "update (roll back)"  # what the tree write journal says was writing
STATE_BACKUP = "state"  # the run folder's copy of applied.json and written/, before the run


def never_started(journal: jr.Journal, head: str | None) -> bool:
    """`recover`: the run never got as far as starting the upstream command and HEAD is where
    it was, so the tree goes back at once (no phase 5 to 10)."""
    if journal.phase < jr.UPSTREAM_PHASE:
        return True
    started = (
        journal.upstream_pgid is not None
        or journal.upstream_ok is not None
        or bool(journal.extra.get("upstream_starting"))
    )
    return journal.phase == jr.UPSTREAM_PHASE and not started and head == journal.old_head


def did_not_happen(not_done: str | None, journal: jr.Journal, head: str | None) -> bool:
    """Phase 6: the update asked for did not happen (NOT_DONE says why) and HEAD is where it
    was (the upstream command failed, timed out, was killed, or its merge was given up), so
    the tree goes back to the `before` snapshot instead of taking the patch set again."""
    return bool(not_done) and head == journal.old_head


@dataclass
class RollbackResult:
    """What rolling the work tree back to the `before` snapshot did."""

    snapshot: str | None  # the `before` commit, or None: the tree was clean (old HEAD)
    written: list[str] = field(default_factory=list)  # paths put back
    checkout: list[str] = field(default_factory=list)  # half-done checkout's paths, undone
    conflicts: list[str] = field(default_factory=list)  # changed since, left as they are
    foreign: list[str] = field(default_factory=list)  # changed by someone else
    found_ref: str | None = None  # where FOREIGN was set aside (EXACT), else it stays in place


def restore_state(state_dir: Path, journal: jr.Journal) -> None:
    """Put back applied.json and the written diffs as they were before the run; without a
    backup (set-aside found nothing to set aside) they were never changed."""
    backup = journal.run_dir(state_dir) / STATE_BACKUP
    if not backup.is_dir():
        return
    (state_dir / APPLIED_FILE).unlink(missing_ok=True)
    shutil.rmtree(state_dir / WRITTEN_DIR, ignore_errors=True)
    if (backup / APPLIED_FILE).is_file():
        shutil.copy2(backup / APPLIED_FILE, state_dir / APPLIED_FILE)
    if (backup / WRITTEN_DIR).is_dir():
        shutil.copytree(backup / WRITTEN_DIR, state_dir / WRITTEN_DIR)


def _release_trees(install: Install, old_head: str) -> list[str]:
    """Trees of what the updater may have been checking out: origin's branches, FETCH_HEAD."""
    shas = git.out(["for-each-ref", "--format=%(objectname)", "refs/remotes/"], install.path)
    candidates = shas.split()
    fetch_head = install.git_dir / "FETCH_HEAD"
    if fetch_head.is_file():
        lines = fetch_head.read_text(errors="replace").splitlines()
        candidates += [line.split("\t", 1)[0] for line in lines if line.strip()]
    trees = []
    for sha in dict.fromkeys(candidates):
        tree_of = ["rev-parse", "-q", "--verify", f"{sha}^{{tree}}"]
        proc = git.run(tree_of, install.path, check=False)
        tree = proc.stdout.decode().strip()
        if proc.returncode == 0 and tree and tree not in trees and sha != old_head:
            trees.append(tree)
    return trees


def _checkout_paths(install: Install, old_tree: str, now: str, old_head: str) -> list[str]:
    """Paths changed since the old HEAD whose content is exactly a fetched release's."""
    changed = trees.changed_paths(install.path, old_tree, now)
    if not changed:
        return []
    theirs: set[str] = set()
    for tree in _release_trees(install, old_head):
        differs = set(trees.changed_paths(install.path, now, tree))
        theirs |= {path for path in changed if path not in differs}
    return sorted(theirs)


def _with_paths_from(repo: Path, tree: str, source: str, paths: list[str]) -> str:
    """TREE with PATHS as SOURCE has them (absent there: absent here)."""
    with temporary_folder() as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index"), "GIT_LITERAL_PATHSPECS": "1"}
        git.run(["read-tree", tree], repo, env=env)
        git.run(["rm", "-q", "--cached", "--ignore-unmatch", "-r", "--", *paths], repo, env=env)
        listing = git.run(["ls-tree", "-r", "-z", source, "--", *paths], repo, env=env).stdout
        if listing:
            git.run(["update-index", "-z", "--index-info"], repo, env=env, stdin=listing)
        return git.out(["write-tree"], repo, env=env)


def _write(install: Install, old: str, new: str) -> list[str]:
    """Turn the work tree from OLD into NEW (it holds OLD), each file old or new."""
    return write_trees(install.path, install.state_dir, ROLL_BACK, old, new)


def roll_back_tree(
    install: Install, journal: jr.Journal, *, updater_ran: bool, exact: bool = False
) -> RollbackResult:
    """Put the work tree back as the `before` snapshot holds it (see the module docstring).

    With UPDATER_RAN, a half-done checkout is undone first and the index is reset to HEAD
    (the updater may have written it); without, the index is left alone (it may still hold
    the user's staged changes, if the crash came before set-aside reset it). With EXACT, what
    nobody we know changed is set aside in a ref and the tree becomes the snapshot exactly.
    """
    repo = install.path
    snapshot = git.rev_parse(repo, journal.ref("before"))
    old_tree = trees.tree_of(repo, journal.old_head)
    target = trees.tree_of(repo, snapshot) if snapshot else old_tree
    now = trees.worktree_tree(install)
    result = RollbackResult(snapshot)
    ours = now
    if updater_ran:
        result.checkout = _checkout_paths(install, old_tree, now, journal.old_head)
        if result.checkout:
            ours = _with_paths_from(repo, now, old_tree, result.checkout)
            _write(install, now, ours)
        others = set(trees.changed_paths(repo, ours, target))
        result.foreign = [p for p in trees.changed_paths(repo, old_tree, ours) if p in others]
    if exact and result.foreign:
        kept = _with_paths_from(repo, old_tree, ours, result.foreign)
        message = f"patchkeeper: changed while the upstream command of update {journal.id} ran"
        result.found_ref = journal.ref("found")
        commit = trees.commit_tree(repo, kept, journal.old_head, message)
        git.run(["update-ref", result.found_ref, commit], repo)
        result.written = _write(install, ours, target)
    else:
        preview = trees.merge_preview(repo, journal.old_head, ours, target)
        result.written = write_merge(install, preview, command=ROLL_BACK)
        result.conflicts = list(preview.conflicts)
    if updater_ran:
        git.run(["reset", "-q"], repo)
    restore_state(install.state_dir, journal)
    return result
