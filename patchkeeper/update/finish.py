"""Phase 10: close the run (the snapshot ref and the state backup go, the journal becomes the
run's history) and name what it leaves for a person."""

from __future__ import annotations

import shutil

from patchkeeper.install.checkout.install import install_version
from patchkeeper.install.checkout.version_chain import reads_the_work_tree
from patchkeeper.install.plumbing import git
from patchkeeper.install.records import update_journal as jr
from patchkeeper.install.records.last_update import record_end
from patchkeeper.leftovers import find as lo
from patchkeeper.patchset.versions import VersionInfo
from patchkeeper.update.context import RunContext
from patchkeeper.update.report import LeftoverAction
from patchkeeper.update.rollback import STATE_BACKUP


def finish(ctx: RunContext) -> None:
    """Phase 10: the run is complete; the snapshot is no longer needed."""
    ctx.report.head_after, after = _where_it_ended(ctx)
    ctx.report.version_after = str(after)
    ctx.report.version_after_from = after.read_from
    ctx.report.version_after_not_from = after.not_from
    if ctx.journal.before_ref and not ctx.journal.extra.get("keep_before"):
        git.run(["update-ref", "-d", ctx.journal.before_ref], ctx.install.path, check=False)
    shutil.rmtree(ctx.journal.run_dir(ctx.state_dir) / STATE_BACKUP, ignore_errors=True)
    _report_own_leftovers(ctx)
    ctx.report.finished = True
    # For status and doctor, later: whether the update asked for happened, and how to retry.
    record_end(
        ctx.journal,
        exit_code=ctx.report.exit_code(),
        not_done=ctx.report.not_done,
        rolled_back=ctx.report.rolled_back,
        head_after=ctx.report.head_after,
    )
    # Not the folder: the rename into the run folder next is not synced either, and a
    # power cut that loses both leaves an unfinished run, which `recover` finishes again.
    jr.save(ctx.state_dir, ctx.journal, then_sync_folder=False)
    jr.finish(ctx.state_dir, ctx.journal)


def _where_it_ended(ctx: RunContext) -> tuple[str | None, VersionInfo]:
    """HEAD and the version after the run. Phase 6 read both before it wrote the patches:
    HEAD is asked again only when something may have moved it since (a smoke check or a
    post-apply command ran, or edits of yours came back). The version is taken from phase 6
    only when the chain is `git describe` alone: a file, stamp or command may read what a
    patch, a check or your edits wrote since."""
    tree, report, settings = ctx.report.tree, ctx.report, ctx.ws.settings
    restored = report.restore is not None and bool(report.restore.restored)
    if tree is None or not tree.head or report.smoke.checks or report.post or restored:
        return ctx.install.head(), install_version(ctx.install, settings)
    if reads_the_work_tree(settings):
        return tree.head, install_version(ctx.install, settings)
    return tree.head, tree.version


def _report_own_leftovers(ctx: RunContext) -> None:
    """The refs this run leaves behind (edits that conflicted, a kept snapshot) are
    leftovers once it is finished: listed here as `patchkeeper leftovers` lists them."""
    if not (ctx.journal.edits_ref or ctx.journal.extra.get("keep_before")):
        return  # nothing of this run's is left: no ref lookup
    for item in lo.run_leftovers(ctx.install, ctx.ws.patch_set, ctx.journal.id):
        action = LeftoverAction(item, "kept", "left by this update for you")
        action.command = item.restore_command(ctx.install, patches=ctx.ws.patch_set.root)
        ctx.report.leftovers.append(action)
