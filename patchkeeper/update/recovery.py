"""`patchkeeper recover`: finish or roll back an update that was interrupted.

The journal says how far the run got. Until the upstream command has started, the way back
is exact and cheap: the `before` ref holds the whole work tree as it was (patches and the
user's edits) and the run folder holds the state patchkeeper had, so both are put back as they
were. Once the upstream command has started, the run's own phases 5-10 (leftovers, apply,
restore, smoke, post, report) are run again; each is idempotent, so it does not matter where
inside them the crash happened. They go forward when the update happened (HEAD moved, or the
upstream command succeeded), and back to the `before` snapshot when it did not (it failed,
timed out or was interrupted with HEAD unmoved, or its merge was given up): then a half-done
checkout is undone too, and recover says the update did not happen (exit 5) and how to retry.

An upstream command that is still running is never taken for dead: recover waits for it (up
to `--wait`), then says so (exit 6) and changes nothing. The updater cannot run unknown to
it: phase 4 starts it held behind a pipe, records its pid and start time, and only then lets it
go, so a kill before the record leaves a process that ends without running. "Still running"
means the group's leader, the pid the journal recorded, is alive with the start time the
journal recorded; a pid reused by another process (after a reboot, say) is not it. Other
members of its group (a daemon the updater started and left) do not make the update "running"
forever: recover names them in a note and carries on.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, field

from patchkeeper.engine.patching import TreeReport, worktree_status
from patchkeeper.install.locks.install_lock import InstallLock
from patchkeeper.install.plumbing import git
from patchkeeper.install.records import update_journal as jr
from patchkeeper.install.records.last_update import record_end
from patchkeeper.install.system.liveness import (
    command_name,
    group_alive,
    group_members,
    may_be_same_process,
)
from patchkeeper.install.workspace import Workspace
from patchkeeper.install.writer.settle import Settled, settle
from patchkeeper.model import exitcodes, nextstep
from patchkeeper.model.errors import BusyError
from patchkeeper.model.verdict import tree_exit_code
from patchkeeper.update.context import UpdateOptions, retry_command
from patchkeeper.update.report import UpdateReport
from patchkeeper.update.rollback import STATE_BACKUP, never_started, roll_back_tree
from patchkeeper.update.run import UpdateRun

NOTHING = "nothing"  # no unfinished update
OLD = "old"  # the old version, with patches and edits as they were
NEW = "new"  # the new version, with patches and edits carried over


@dataclass
class RecoverReport:
    """What `recover` did with an interrupted update, and which way it went."""

    journal: jr.Journal | None
    direction: str
    actions: list[str] = field(default_factory=list)
    update: UpdateReport | None = None  # the finished run (direction NEW)
    tree: TreeReport | None = None  # how the patches stand afterwards (direction OLD)
    kept: list[str] = field(default_factory=list)  # files only the `before` ref still holds
    not_done: str = ""  # why the update asked for did not happen (direction OLD)
    retry: str = ""  # the command that runs it again
    settled: Settled | None = None  # an interrupted tree write, undone first

    def exit_code(self) -> int:
        if self.update is not None:
            return exitcodes.worst(self.update.exit_code(), *self._settled_codes())
        codes = [exitcodes.ATTENTION] if self.kept or self.not_done else []
        codes += self._settled_codes()
        if self.tree is not None:
            codes.append(tree_exit_code(self.tree.results, pending_needs_attention=True))
        return exitcodes.worst(*codes)

    def _settled_codes(self) -> list[int]:
        return [exitcodes.ATTENTION] if self.settled and self.settled.kept else []


def _leader_running(journal: jr.Journal, pgid: int) -> bool:
    """Whether the upstream command itself (the group's leader, as recorded) still runs."""
    return may_be_same_process(pgid, journal.upstream_start_time)


def _check_upstream(journal: jr.Journal) -> list[str]:
    """Refuse (busy) while the upstream command runs, or a git it started still does; name
    whatever else it left in its group (a daemon must not keep recover busy forever)."""
    pgid = journal.upstream_pgid
    running = journal.phase == jr.UPSTREAM_PHASE and journal.upstream_exit is None
    if not (running and pgid):
        return []
    if _leader_running(journal, pgid):
        raise BusyError(
            f"the upstream command of update {journal.id} is still running (pid {pgid}, "
            f"leader of process group {pgid}); wait for it to end (or stop it), then run "
            "`patchkeeper recover`"
        )
    if not group_alive(pgid):
        return []
    members = group_members(pgid)
    gits = [pid for pid in members if command_name(pid) == "git"]
    if gits:  # e.g. the updater was OOM-killed mid `git pull`: its git may still move HEAD
        raise BusyError(
            f"the upstream command of update {journal.id} has ended, but git (pids "
            f"{', '.join(map(str, gits))}) of its process group {pgid} still runs and may still "
            f"change the install; wait for it to end (or stop it: `kill -- -{pgid}`), then run "
            "`patchkeeper recover`"
        )
    who = f"pids {', '.join(map(str, members))}" if members else "some processes"
    return [
        f"the upstream command (pid {pgid}) has ended, but {who} of its process group {pgid} "
        f"still run; left alone (stop them with `kill -- -{pgid}` if they should not outlive "
        "the update)"
    ]


_UPSTREAM_POLL_SECONDS = 0.2


def _wait_for_upstream(journal: jr.Journal, wait: float) -> list[str]:
    """`_check_upstream`, asked again until the upstream command has ended or WAIT seconds
    have passed (then busy, exit 6): nothing is decided while it can still move HEAD."""
    deadline = time.monotonic() + wait
    while True:
        try:
            return _check_upstream(journal)
        except BusyError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(_UPSTREAM_POLL_SECONDS)


def roll_back(workspace: Workspace, journal: jr.Journal, report: RecoverReport) -> None:
    install = workspace.install
    if git.rev_parse(install.path, journal.ref("before")) is None:
        report.actions.append("nothing had been changed yet: the install is as it was")
    else:
        # A 3-way merge rather than an overwrite: edits made after the crash are kept too.
        result = roll_back_tree(install, journal, updater_ran=False)
        report.actions.append(
            f"put the work tree back as it was before update {journal.id} "
            "(patches and your edits), and patchkeeper's record of what it wrote"
        )
        if result.conflicts:
            report.kept = result.conflicts
            report.actions.append(
                f"changed since the crash, so left as they are: {', '.join(result.conflicts)}; "
                f"their content before the update is in {journal.ref('before')} "
                f"(see: {nextstep.shell('git', '-C', install.path, 'diff', journal.ref('before'))}"
                " -- FILE)"
            )
    doomed = ("edits",) if report.kept else ("before", "edits")
    for what in doomed:
        git.run(["update-ref", "-d", journal.ref(what)], install.path, check=False)
    shutil.rmtree(journal.run_dir(install.state_dir) / STATE_BACKUP, ignore_errors=True)
    # The update asked for never ran: said so, with its retry, here and by `status` after.
    report.not_done = f"it was interrupted in phase {journal.phase_label}, before it ran"
    report.retry = journal.extra.get("retry") or retry_command(workspace, UpdateOptions())
    record_end(
        journal,
        exit_code=exitcodes.ATTENTION,
        not_done=report.not_done,
        rolled_back=True,
        head_after=install.head(),
        retry=report.retry,
    )
    jr.save(install.state_dir, journal)
    jr.finish(install.state_dir, journal)
    report.tree = worktree_status(install, workspace.settings, workspace.patch_set)


def recover(
    workspace: Workspace, lock: InstallLock, options: UpdateOptions, wait: float = 0.0
) -> RecoverReport:
    """Bring the install to a consistent state after an interrupted update; say what was done.
    An upstream command still running is waited for up to WAIT seconds, then busy (exit 6)."""
    state_dir = workspace.install.state_dir
    journal = jr.load(state_dir)
    if journal is not None:
        notes = _wait_for_upstream(journal, wait)  # before anything is written, even settling
    settled = settle(workspace.install.path, state_dir)
    done = [settled.describe()] if settled else []
    if journal is None:
        report = RecoverReport(None, NOTHING, done or ["no unfinished update: nothing to recover"])
        report.settled = settled
        return report
    goes_back = never_started(journal, workspace.install.head())
    report = RecoverReport(journal, OLD if goes_back else NEW, done)
    report.settled = settled
    report.actions.append(
        f"update {journal.id} (pid {journal.pid}) stopped in phase {journal.phase_label}"
    )
    report.actions.extend(notes)
    if report.direction == OLD:
        roll_back(workspace, journal, report)
        return report
    report.actions.append(
        "the upstream command had started: settling the update (phases 5-10), forward when it "
        "happened, back to the snapshot when it did not"
    )
    run = UpdateRun(workspace, lock, options, journal)
    run.ctx.resumed = True
    report.update = run.complete()
    if report.update.rolled_back:
        report.direction = OLD
    return report
