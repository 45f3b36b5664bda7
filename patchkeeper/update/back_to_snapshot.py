"""Phase 6 when the update asked for did not happen (HEAD unmoved): the rollback, back to the
`before` snapshot on the old HEAD (update/rollback.py does the writing); what a half-done
checkout left is undone, nothing else is lost. Phase 7 is then skipped: the snapshot holds
your edits."""

from __future__ import annotations

from patchkeeper.engine.patching import worktree_status
from patchkeeper.install.plumbing import git
from patchkeeper.install.records import update_journal as jr
from patchkeeper.leftovers import find as lo
from patchkeeper.model import nextstep
from patchkeeper.update.context import RunContext
from patchkeeper.update.left_behind import settle_leftovers
from patchkeeper.update.rollback import roll_back_tree


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
