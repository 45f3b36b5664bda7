"""Phases 6 and 7 on the way back and forward: merge the user's edits back file by file (restore),
or, when the update did not happen, put the `before` snapshot back on the old HEAD (roll_back)."""

from __future__ import annotations

from patchkeeper.engine.patching import worktree_status
from patchkeeper.install import git, trees
from patchkeeper.install import journal as jr
from patchkeeper.install.scratch import ref_paths_tree, worktree_paths_tree
from patchkeeper.install.worktree_writer import write_merge
from patchkeeper.leftovers import find as lo
from patchkeeper.model import nextstep
from patchkeeper.update.context import RunContext
from patchkeeper.update.left_behind import settle_leftovers
from patchkeeper.update.report import KeptFile, RestoreResult
from patchkeeper.update.rollback import roll_back_tree


def restore(ctx: RunContext) -> str:
    """Phase 7: the edits ref merged back, path by path; what conflicts stays in the ref."""
    ref = ctx.journal.edits_ref
    ctx.report.restore = result = RestoreResult(ref)
    if ref is None:
        return "no edits of yours to restore"
    if git.rev_parse(ctx.install.path, ref) is None:  # a resumed run restored them already
        return f"your edits were restored before ({ref} is gone)"
    base = ctx.journal.old_head
    # Only the paths the edits ref holds are merged back: the rest of the work tree is
    # neither read (no whole-tree `git add`) nor reached by the merge.
    repo = ctx.install.path
    paths = trees.changed_paths(repo, base, ref)
    base_commit = trees.commit_tree(repo, ref_paths_tree(repo, base, paths), None, "base")
    preview = trees.merge_preview(
        repo, base_commit, worktree_paths_tree(repo, paths), ref_paths_tree(repo, ref, paths)
    )
    result.restored = write_merge(ctx.install, preview, command="update (restore)")
    jr.checkpoint("7.1")
    for path in preview.conflicts:
        show = nextstep.shell("git", "-C", ctx.install.path, "diff", base[:12], ref, "--", path)
        result.kept.append(KeptFile(path, show))
    if result.kept:
        leftover = lo.Leftover(
            git.out(["rev-parse", ref], ctx.install.path)[:10], lo.SET_ASIDE, ref, None, None
        )
        result.command = leftover.restore_command(
            ctx.install, markers=True, patches=ctx.ws.patch_set.root
        )
        ctx.report.attention.append(
            f"{len(result.kept)} file(s) of your edits conflict with the new version; "
            f"they stay in {ref}; merge them with conflict markers: {result.command}"
        )
    else:
        git.run(["update-ref", "-d", ref], ctx.install.path)
        ctx.journal.edits_ref = None
        jr.save(ctx.state_dir, ctx.journal)
    return f"restored {len(result.restored)} file(s), kept {len(result.kept)} in {ref}"


def roll_back(ctx: RunContext) -> str:
    """Phase 6 when the update did not happen: the `before` snapshot, exactly, on the old
    HEAD (rollback.py); what a half-done checkout left is undone, nothing else is lost."""
    # Exact in the update's own run (patchkeeper held the install all along); a resumed
    # run keeps what changed since the crash in place (it may be the operator's).
    exact = not ctx.resumed
    result = roll_back_tree(ctx.install, ctx.journal, updater_ran=True, exact=exact)
    jr.checkpoint("6.1")
    ctx.report.rolled_back = True
    ctx.report.tree = worktree_status(ctx.install, ctx.ws.settings, ctx.ws.patch_set)
    settle_leftovers(ctx, {r.name: r.outcome for r in ctx.report.tree.results})
    where = f"git -C {nextstep.shell(ctx.install.path)}"
    if result.checkout:
        ctx.report.notes.append(
            f"undid what the interrupted checkout left: {len(result.checkout)} file(s) of "
            "the new release written or removed"
        )
    if result.foreign and result.found_ref:
        found = git.out(["rev-parse", result.found_ref], ctx.install.path)[:10]
        item = lo.Leftover(found, lo.SET_ASIDE, result.found_ref, None, None)
        restore = item.restore_command(ctx.install, patches=ctx.ws.patch_set.root)
        ctx.report.attention.append(
            f"changed while the upstream command ran, not by patchkeeper and not as in the "
            f"release it fetched: {', '.join(result.foreign)}; set aside in "
            f"{result.found_ref} (leftover {found}) and rolled back; if they are wanted, "
            f"merge them back with: {restore}"
        )
    elif result.foreign:
        ctx.report.attention.append(
            f"changed while the upstream command ran or since, not by patchkeeper and not "
            f"as in the release it fetched, so kept as they are: "
            f"{', '.join(result.foreign)}; look at them with: {where} status -- "
            f"{nextstep.shell(*result.foreign)}"
        )
    if result.conflicts:
        ctx.journal.extra["keep_before"] = True
        jr.save(ctx.state_dir, ctx.journal)
        ref = ctx.journal.ref("before")
        ctx.report.attention.append(
            f"changed since the update started, so left as they are: "
            f"{', '.join(result.conflicts)}; their content before the update is in {ref}; "
            f"compare with: {where} diff {ref} -- {nextstep.shell(*result.conflicts)}"
        )
    if ctx.journal.edits_ref:  # the snapshot holds the edits: their ref is not needed
        git.run(["update-ref", "-d", ctx.journal.edits_ref], ctx.install.path, check=False)
        ctx.journal.edits_ref = None
        jr.save(ctx.state_dir, ctx.journal)
    return (
        f"back to the snapshot of the work tree before the update: {len(result.written)} "
        f"file(s) put back, {len(result.checkout)} of a half-done checkout undone"
    )
