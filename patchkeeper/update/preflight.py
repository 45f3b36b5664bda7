"""Phases 1 and 2: refuse what cannot be carried across before anything changes (preflight), and
with --preview REF, judge the patch set against REF first and stop if a patch would not apply."""

from __future__ import annotations

from dataclasses import dataclass

from patchkeeper.engine.symlinks import check_symlinks
from patchkeeper.leftovers import find as lo
from patchkeeper.model import nextstep
from patchkeeper.model import outcomes as oc
from patchkeeper.model.errors import BusyError
from patchkeeper.update.context import DEFAULT_TIMEOUT, RunContext
from patchkeeper.update.report import LeftoverAction


def preflight(ctx: RunContext) -> str:
    """Phase 1: refuse a patch that goes through a symlink, or a git lock file a live process
    holds (one nobody holds is removed), and note what was left behind before the run (so
    phase 5 can tell what its updater left)."""
    check_symlinks(ctx.install, ctx.ws.patch_set)  # refused before anything changes
    settle_git_locks(ctx)
    # Unmerged paths are not leftovers of before: refused by `locked_for_writing`, or, in
    # a run without --preview, by set_aside.survey before phase 3 (run.py).
    leftovers = lo.find_leftovers(ctx.install, ctx.ws.patch_set, unmerged=False)
    for item in leftovers:
        ctx.report.leftovers.append(LeftoverAction(item, "found-before"))
    # Phase 5 finds these again without asking git (only this run, under the lock, adds one).
    ctx.set_aside_before = [item for item in leftovers if item.kind == lo.SET_ASIDE]
    # Saved with the next phase's record: preflight changes nothing a crash could leave.
    ctx.journal.extra["leftovers_before"] = [item.id for item in leftovers]
    return f"HEAD {ctx.journal.old_head[:12]}, version {ctx.journal.old_version}"


def settle_git_locks(ctx: RunContext) -> None:
    """A git lock file a live process holds (a git at work in the install) would make the
    updater fail, after the patches were taken out: busy (exit 6), before anything changes.
    One nobody can hold (a git that ended without removing it) would make it fail too: it is
    removed, as phase 6 removes one the updater left (install/locks/git_locks.py's proof)."""
    from patchkeeper.install.locks import git_locks as gitlocks

    for lock in gitlocks.lock_files(ctx.install):
        held = gitlocks.holders(ctx.install, lock)
        if held:
            who = "; ".join(holder.describe() for holder in held)
            raise BusyError(
                f"{ctx.install.path}: busy: {lock} is held by {who}; nothing was changed: "
                "update once it has ended"
            )
        lock.unlink(missing_ok=True)
        ctx.report.notes.append(
            f"removed {lock}: no live process holds it (a git that ended left it behind; "
            "the updater would have failed on it)"
        )


@dataclass(frozen=True)
class Previewed:
    """Phase 2's answer: what its record says, and whether the update stops here."""

    detail: str
    stop: bool = False


def preview(ctx: RunContext) -> Previewed:
    """Phase 2, run with --preview REF: stop here when a patch would not apply on REF, or REF's
    branch could not be fetched (either unless --force)."""
    from patchkeeper.engine.checking import check_ref

    ref = ctx.options.preview
    assert ref is not None  # without one the phase is skipped
    problem = _freshen(ctx, ref)
    if problem:
        return Previewed(problem, stop=True)
    ctx.report.preview = check_ref(ctx.install.path, ctx.ws.patch_set, ref, ctx.ws.settings)
    failed = [r.name for r in ctx.report.preview.results if r.outcome in oc.FAILED]
    if failed and not ctx.options.force:
        ctx.report.not_done = f"stopped at its preview of {ref}"
        ctx.report.attention.append(
            f"{', '.join(failed)} would not apply on {ref}: nothing was changed; "
            f"refresh the patch for {ref} first, or update anyway: " + _forced_command(ctx, ref)
        )
        return Previewed(
            f"{', '.join(failed)} would not apply on {ref}: stopped (use --force)", stop=True
        )
    return Previewed(f"{ref}: " + (f"{', '.join(failed)} would not apply" if failed else "clean"))


def _freshen(ctx: RunContext, ref: str) -> str:
    """Fetch REF's branch first when it is a remote-tracking ref, so the preview never
    passes on stale data (freshness.py). When the fetch fails: stop, saying how old the ref
    is and how to preview it as it is (--force), or with --force go on with a note."""
    from patchkeeper.install.checkout.freshness import FETCH_TIMEOUT, freshen

    timeout = min(ctx.options.timeout or DEFAULT_TIMEOUT, FETCH_TIMEOUT)
    fresh = freshen(ctx.install.path, ref, timeout)
    ctx.report.preview_fetch = fresh
    if fresh is None or fresh.fetched:
        return ""
    if fresh.before is None:  # never fetched: there is nothing to preview as it is
        ctx.report.not_done = f"could not fetch {fresh.remote} to preview {ref}"
        ctx.report.attention.append(
            f"could not fetch {fresh.remote} to preview {ref} ({fresh.error}), and this clone "
            f"has never fetched {ref}: nothing was changed; check the name, and retry once "
            f"{fresh.remote} can be reached"
        )
        return f"could not fetch {fresh.remote}: stopped before touching anything"
    stale = (
        f"could not fetch {fresh.remote} to preview {ref} ({fresh.error}); {ref} was last "
        f"fetched {fresh.age()} ({(fresh.before or '?')[:12]})"
    )
    if ctx.options.force:
        ctx.report.notes.append(f"{stale}: previewed as it is (--force)")
        return ""
    forced = _forced_command(ctx, ref)
    ctx.report.not_done = f"could not fetch {fresh.remote} to preview {ref}"
    ctx.report.attention.append(
        f"{stale}, so a preview would judge stale data: nothing was changed; retry once "
        f"{fresh.remote} can be reached, or preview it as it is and go on: {forced}"
    )
    return f"could not fetch {fresh.remote}: stopped before touching anything"


def _forced_command(ctx: RunContext, ref: str) -> str:
    """This update again, going on past its preview of REF (--force)."""
    return nextstep.command(
        "update",
        "--preview",
        ref,
        "--force",
        *(["--timeout", f"{ctx.options.timeout:g}"] if ctx.options.timeout else []),
        install=ctx.install.path,
        patches=ctx.ws.patch_set.root,
        rest=ctx.options.args,
    )
