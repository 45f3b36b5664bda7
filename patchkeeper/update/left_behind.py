"""Phase 5 and what the run decides after the updater: the leftovers it left (parked stashes,
autostash files, unmerged paths), whether anything may be written now (`blocked`), whether the
update asked for happened (`not_done`), and how each leftover is settled once the patches are
back (`settle_leftovers`)."""

from __future__ import annotations

import datetime as dt

from patchkeeper.install.checkout.install import behind_upstream, operation_in_progress
from patchkeeper.install.locks import git_locks as gitlocks
from patchkeeper.install.records import update_journal as jr
from patchkeeper.leftovers import find as lo
from patchkeeper.model import outcomes as oc
from patchkeeper.update.context import RunContext
from patchkeeper.update.report import LeftoverAction

# Outcomes after which a patch's content is back in the tree (or no longer needed).
BACK_IN_PLACE = (*oc.WRITES, oc.ALREADY_APPLIED, oc.UPSTREAM_HAS_IT)


def leftovers(ctx: RunContext) -> str:
    """Phase 5: what is left behind now (the stashes the updater pushed among it), each
    remembered until it is settled."""
    new = lo.new_stash_shas(ctx.install, ctx.journal.stash_top, _epoch(ctx.journal))
    before = set(ctx.journal.extra.get("leftovers_before", []))
    ctx.report.leftovers = []
    found = lo.find_leftovers(
        ctx.install,
        ctx.ws.patch_set,
        new_stashes=new,
        exclude_run=ctx.journal.id,
        set_aside=ctx.set_aside_before,
    )
    for item in found:
        action = LeftoverAction(item, "found")
        if item.id not in before:
            item.notes.append("left by this update's upstream command")
        ctx.report.leftovers.append(action)
    # Whatever its message, a stash this run reports stays a leftover until it is settled.
    lo.remember_stashes(ctx.install, [a.leftover for a in ctx.report.leftovers], ctx.journal.id)
    summary = ", ".join(
        f"{a.leftover.id} {a.leftover.classification}" for a in ctx.report.leftovers
    )
    return summary or "nothing left behind"


def blocked(ctx: RunContext) -> tuple[str, str] | None:
    """Why nothing may be written now, and what must happen first: a git lock file that a
    live process may hold (a stale one is removed: install/locks/git_locks.py), or a git
    operation the updater left unfinished (applying now would mix into it)."""
    for lock in gitlocks.lock_files(ctx.install):
        holders = gitlocks.holders(ctx.install, lock, ctx.journal.upstream_pgid)
        if holders:
            who = "; ".join(holder.describe() for holder in holders)
            return f"{lock} is held by {who}, which may still change the install", (
                "once it has ended"
            )
        lock.unlink(missing_ok=True)
        ctx.report.notes.append(
            f"removed {lock}: no live process holds it (the updater's process group has "
            "ended and no git works in the install)"
        )
    # Phase 5 has just listed the unmerged paths among the leftovers: not asked again.
    unmerged = [
        path
        for action in ctx.report.leftovers
        if action.leftover.kind == lo.UNMERGED
        for path in action.leftover.files
    ]
    operation = operation_in_progress(ctx.install, unmerged)
    if operation is None:
        return None
    if ctx.install.head() == ctx.journal.old_head:
        ctx.journal.extra["left_unfinished"] = operation
        jr.save(ctx.state_dir, ctx.journal)
    return operation, "finish or abort it with git"


def not_done(ctx: RunContext) -> str:
    """Why the update asked for did not happen (or not all of it), or "" when it did."""
    journal = ctx.journal

    def unmoved() -> bool:  # asked of git only where it matters (not after a clean run)
        return ctx.install.head() == journal.old_head

    if journal.upstream_ok is False:
        said = journal.extra.get("upstream_said") or f"exit {journal.upstream_exit}"
        return f"the upstream command failed ({said})"
    if journal.upstream_ok is None:  # patchkeeper died while the upstream command ran
        return "the upstream command was interrupted before it finished" if unmoved() else ""
    left = journal.extra.get("left_unfinished")
    if left and unmoved():
        return f"the upstream command left this unfinished, and it was given up: {left}"
    # Exit 0 with HEAD unmoved is "nothing new", unless its branch could fast-forward: then
    # it took nothing of what it fetched (a skipped merge, a swallowed error, `--check`).
    behind = behind_upstream(ctx.install) if unmoved() else None
    if behind:
        return f"the upstream command exited 0 but left HEAD where it was, {behind}"
    return ""


def settle_leftovers(ctx: RunContext, outcomes: dict[str, str]) -> None:
    """Drop patch-content leftovers whose patches are back (after a backup); flag the rest."""
    for action in ctx.report.leftovers:
        item = action.leftover
        back = item.patches and all(outcomes.get(n) in BACK_IN_PLACE for n in item.patches)
        if item.classification == lo.PATCH_CONTENT and back:
            from patchkeeper.leftovers import heal  # a leftover to drop: rare

            action.backup_ref = heal.drop(ctx.install, item)
            action.action = "dropped"
            action.detail = "held only patch content, which is back in place"
            action.command = heal.undo_command(ctx.install, item)
            continue
        action.action = "kept"
        if item.kind == lo.UNMERGED:
            action.detail = "unmerged paths: resolve with git"
        elif item.classification == lo.PATCH_CONTENT:
            action.detail = "holds patch content that is not back in place"
        else:
            action.detail = f"holds {item.classification.replace('-', ' ')}"
        action.command = item.restore_command(ctx.install, patches=ctx.ws.patch_set.root)
        ctx.report.attention.append(
            f"leftover {item.id} ({item.kind}, {item.classification}) kept: {action.command}"
        )


def _epoch(journal: jr.Journal) -> float:
    return dt.datetime.fromisoformat(journal.started_at).timestamp()
