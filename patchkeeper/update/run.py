"""`patchkeeper update`: run the upstream's updater and carry the patch set across it.

The updater (`hermes update`) stashes whatever is dirty, moves HEAD, and may leave the stash
parked while reporting success. So patchkeeper never lets it see a dirty tree: before it runs,
patchkeeper takes its own patches out and puts the user's own edits into a named ref (a commit
on the old HEAD), leaving a clean checkout; afterwards it applies the patch set to the new
version and merges the edits back file by file. Each phase is recorded in the journal before
it starts (install/records/update_journal.py), and everything the phases need to undo or
finish the run lives in git objects named by refs, so `recover` can finish or roll back a run
killed at any point.

Phases: 1 preflight, 2 preview, 3 set-aside, 4 upstream, 5 leftovers, 6 apply, 7 restore,
8 smoke, 9 post, 10 report. Phases 5-10 are also how `recover` finishes an interrupted run.
Each phase is a function of the run's context (context.py) in a module of its own; this one
records each in the journal before it starts and chooses which comes next.

The modules of phases 5-10 are imported when those phases start, not with this one: an update
loads them in a thread while phases 1 and 2 wait on git (`_load_later_phases`), and waits for
them before phase 3, so a patchkeeper that cannot load them changes nothing.
"""

from __future__ import annotations

import datetime as dt
import os
import time
from collections.abc import Callable
from typing import TypeVar

from patchkeeper.install.checkout.install import install_version
from patchkeeper.install.locks.install_lock import InstallLock
from patchkeeper.install.plumbing.meanwhile import meanwhile
from patchkeeper.install.records import update_journal as jr
from patchkeeper.install.workspace import Workspace
from patchkeeper.leftovers import find as lo
from patchkeeper.model import exitcodes, nextstep
from patchkeeper.model.errors import PatchkeeperError
from patchkeeper.update import set_aside, upstream
from patchkeeper.update.context import RunContext, UpdateOptions, retry_command
from patchkeeper.update.preflight import preflight, preview
from patchkeeper.update.report import PhaseRecord, SmokeReport, UpdateReport

SMOKE_PHASE = jr.PHASES.index("smoke") + 1
# Phase records whose rename needs no folder sync: preflight and preview change nothing (a
# record a power cut loses leaves no update to recover, which is then true), and the upstream
# phase's record is followed at once, nothing done in between, by a synced one.
UNSYNCED_RECORDS = (
    jr.PHASES.index("preflight") + 1,
    jr.PHASES.index("preview") + 1,
    jr.UPSTREAM_PHASE,
)
T = TypeVar("T")
Phase = Callable[[RunContext], str]


def _came_back(ctx: RunContext) -> str:
    """Phase 7 after a roll back: the snapshot held the edits too."""
    return "your edits came back with the snapshot"


class UpdateRun:
    """One update (or the rest of one, for `recover`), phase by phase."""

    def __init__(
        self, workspace: Workspace, lock: InstallLock, options: UpdateOptions, journal: jr.Journal
    ) -> None:
        install = workspace.install
        report = UpdateReport(install, journal.id, journal.old_head, journal.old_version)
        read = journal.extra.get("version_before_read")  # absent in a journal of before
        if isinstance(read, list) and len(read) == 2:
            report.version_before_from, report.version_before_not_from = read
        report.patch_set = workspace.patch_set_label
        # A journal written before runs recorded it: the same update, without its options.
        report.retry = journal.extra.get("retry") or retry_command(workspace, UpdateOptions())
        self.ctx = RunContext(workspace, lock, options, journal, report)

    def phase(
        self, number: int, body: Callable[[RunContext], T], said: Callable[[T], str] = str
    ) -> T:
        """Record phase NUMBER in the journal, then run BODY; what SAID makes of its answer is
        the phase's detail in the report."""
        ctx, name = self.ctx, jr.phase_name(number)
        sync = False if number in UNSYNCED_RECORDS else None  # None: the journal's own rule
        jr.begin_phase(ctx.state_dir, ctx.journal, number, then_sync_folder=sync)
        ctx.lock.set_phase(name)
        ctx.say(f"[{number}/{len(jr.PHASES)}] {name}")
        started = time.monotonic()
        record = PhaseRecord(number, name, "done")
        ctx.report.phases.append(record)
        try:
            answer = body(ctx)
            record.detail = said(answer)
        except BaseException:
            record.status = "failed"
            raise
        finally:
            record.seconds = round(time.monotonic() - started, 3)
        return answer

    def skip(self, number: int, why: str) -> None:
        """A phase that does not run, said in the progress like one that does (no jump from
        [1/10] to [3/10]); a skipped smoke phase reports `not-run`, never `not-configured`."""
        name = jr.phase_name(number)
        self.ctx.say(f"[{number}/{len(jr.PHASES)}] {name}: skipped ({why})")
        self.ctx.report.phases.append(PhaseRecord(number, name, "skipped", 0, why))
        if number == SMOKE_PHASE:
            self.ctx.report.smoke = SmokeReport("not-run", why)

    def _blocked_report(self, what: str, how: str) -> UpdateReport:
        """Stop before phase 6; the journal stays, so `recover` finishes the run later."""
        from patchkeeper.update import left_behind

        ctx = self.ctx
        for number in range(6, 11):
            self.skip(number, what)
        failed = ctx.journal.upstream_ok is False
        after = f" (after {left_behind.not_done(ctx)})" if failed else ""
        recover = nextstep.command(
            "recover", install=ctx.install.path, patches=ctx.ws.patch_set.root
        )
        ctx.report.attention.append(
            f"{what}{after}: patches not applied, your edits stay in "
            f"{ctx.journal.edits_ref or '(none)'}; {how}, then run: {recover}"
        )
        ctx.report.head_after = ctx.install.head()
        return ctx.report

    def complete(self) -> UpdateReport:
        """Phases 5-10: find leftovers, apply, restore, smoke, post, report.

        When the update asked for did not happen and HEAD is where it was (the upstream
        command failed, timed out, was killed, or its merge was given up), phase 6 rolls the
        tree back to the `before` snapshot instead of applying the patch set again, and the
        run ends with the command that retries it.
        """
        from patchkeeper.update import checks, finish, left_behind, reapply, restore
        from patchkeeper.update.back_to_snapshot import roll_back
        from patchkeeper.update.rollback import did_not_happen

        ctx, report = self.ctx, self.ctx.report
        self.phase(5, left_behind.leftovers)
        blocked = left_behind.blocked(ctx)
        if blocked:
            return self._blocked_report(*blocked)
        report.not_done = left_behind.not_done(ctx)
        back = did_not_happen(report.not_done, ctx.journal, ctx.install.head())
        post_skipped = "the update did not happen" if back else "the upstream command failed"
        plan: list[tuple[int, Phase | str]] = [
            (6, roll_back if back else reapply.apply),
            (7, _came_back if back else restore.restore),
            (8, checks.smoke),
            (9, post_skipped if report.not_done else checks.post),
        ]
        for number, step in plan:
            if isinstance(step, str):
                self.skip(number, step)
            else:
                self.phase(number, step)
        if back:
            report.attention.insert(
                0,
                f"the update did not happen: {report.not_done}; the install is back at "
                f"{ctx.journal.old_version} ({ctx.journal.old_head[:12]}) with its patches and "
                f"your edits as they were; retry: {report.retry}",
            )
        elif report.not_done:
            report.attention.insert(
                0,
                f"the update did not finish: {report.not_done} after moving HEAD to "
                f"{(ctx.install.head() or '?')[:12]}; its later steps may not have run; "
                f"retry: {report.retry}",
            )
        self.phase(10, lambda _: "done")
        finish.finish(ctx)
        return report


def start_journal(workspace: Workspace) -> jr.Journal:
    install = workspace.install
    head = install.head()
    if head is None:
        raise PatchkeeperError(f"{install.path}: HEAD does not name a commit", exitcodes.USAGE)
    version = install_version(install, workspace.settings)
    journal = jr.Journal(
        id=jr.new_run_id(),
        pid=os.getpid(),
        started_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        old_head=head,
        old_version=str(version),
        stash_top=lo.stash_top(install),
    )
    journal.extra["version_before_read"] = [version.read_from, version.not_from]  # for the report
    return journal


def run_update(workspace: Workspace, lock: InstallLock, options: UpdateOptions) -> UpdateReport:
    """The whole update. The caller holds the install through `locked_for_writing`, whose
    refusals (git busy, an unfinished update) came before anything changed."""
    later_phases = meanwhile(_load_later_phases)
    journal = start_journal(workspace)
    journal.extra["retry"] = retry_command(workspace, options)
    run = UpdateRun(workspace, lock, options, journal)
    try:
        run.phase(1, preflight)
        if options.preview is None:
            run.skip(2, "no --preview REF")
            go_on = True
        else:
            go_on = not run.phase(2, preview, lambda previewed: previewed.detail).stop
        later_phases()  # a patchkeeper that cannot load them stops here, not half-way
    except (PatchkeeperError, ImportError):  # nothing was changed yet: no journal to recover
        (workspace.install.state_dir / jr.JOURNAL_FILE).unlink(missing_ok=True)
        raise
    if not go_on:
        from patchkeeper.update import finish

        for number in range(3, 10):
            run.skip(number, "stopped after preview")
        run.phase(10, lambda _: "stopped before touching anything")
        finish.finish(run.ctx)
        return run.ctx.report
    run.phase(3, set_aside.set_aside)
    run.phase(4, upstream.upstream)
    return run.complete()


def _load_later_phases() -> None:
    """Import the modules phases 5-10 use, in a thread beside phases 1 and 2 (mostly waits on
    git), and waited for before phase 3 changes anything: a patchkeeper that cannot load one
    (a half-done upgrade of it) refuses with the install as it was. Safe: the package has no
    import circles (tests/test_layout.py), so the two threads can never each hold a module the
    other waits for; at worst the main one waits for an import under way."""
    from patchkeeper.update import checks, finish, left_behind, reapply, restore  # noqa: F401
    from patchkeeper.update.back_to_snapshot import roll_back  # noqa: F401
