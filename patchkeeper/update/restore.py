"""Phase 7 on the way forward: your edits, set aside in phase 3, merged back file by file (a
3-way merge written by the work-tree writer); what conflicts stays in the edits ref. (On the
way back, phase 6 is the rollback: back_to_snapshot.py.)"""

from __future__ import annotations

from patchkeeper.install.checkout import tree_objects as trees
from patchkeeper.install.plumbing import git
from patchkeeper.install.plumbing.scratch_index import ref_paths_tree, worktree_paths_tree
from patchkeeper.install.records import update_journal as jr
from patchkeeper.install.writer.write import write_merge
from patchkeeper.leftovers import find as lo
from patchkeeper.model import nextstep
from patchkeeper.update.context import RunContext
from patchkeeper.update.report import KeptFile, RestoreResult


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
