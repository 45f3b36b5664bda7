"""`patchkeeper recover`: finish or roll back an interrupted update, and say which."""

from __future__ import annotations

from pathlib import Path

import click

from patchkeeper.commands.common import (
    Seconds,
    install_option,
    json_option,
    metrics_option,
    open_workspace,
    patches_option,
    recover_wait_option,
    write_metrics,
)
from patchkeeper.install.locks.install_lock import install_lock
from patchkeeper.patchset.load import refuse_overlapping_variants
from patchkeeper.report.render import emit_json
from patchkeeper.report.tree import render_tree, tree_json
from patchkeeper.report.update import render_update, update_json
from patchkeeper.update.context import UpdateOptions
from patchkeeper.update.recovery import NEW, NOTHING, OLD, RecoverReport, recover

_WHERE = {OLD: "the install is back at the old version", NEW: "the install is at the new version"}
_ALL_THERE = {OLD: "with its patches and your edits", NEW: "with the patches and your edits"}


def meaning(report: RecoverReport, code: int) -> str:
    """The result line: it claims everything is in place only when the exit code says so, and
    never calls the install updated when the update did not happen."""
    direction, update = report.direction, report.update
    if direction == NOTHING:
        return "nothing to recover" if code == 0 else f"see above (exit {code})"
    if update is None and report.not_done:
        return (
            f"the update did not happen: {report.not_done}; the install is back at the old "
            f"version, with its patches and your edits as they were (exit {code}); retry: "
            f"{report.retry}"
        )
    if update is not None and not update.finished:
        return f"the update is not finished (exit {code}): see above"
    if update is not None and update.not_done and update.rolled_back:
        return (
            f"the update did not happen: {update.not_done}; the install is back at the old "
            f"version, with its patches and your edits as they were (exit {code}); retry: "
            f"{update.retry}"
        )
    if update is not None and update.not_done:
        return f"the update did not finish: {update.not_done} (exit {code}); see above"
    if code == 0:
        return f"{_WHERE[direction]}, {_ALL_THERE[direction]}"
    return f"{_WHERE[direction]}, but not everything is in place (exit {code}): see above"


@click.command("recover")
@click.option(
    "--timeout",
    type=Seconds(zero_ok=False),
    default=None,
    help="Seconds each post-apply command may run when the update is finished.",
)
@install_option
@patches_option
@recover_wait_option
@json_option
@metrics_option
def command(
    timeout: float | None,
    install_path: Path | None,
    patches_dir: Path | None,
    wait: float,
    as_json: bool,
    metrics_path: Path | None,
) -> int:
    """Bring the install to a consistent state after an update was interrupted.

    Reads the journal (.git/patchkeeper/journal.json). Before the upstream command moved
    HEAD, the old version is put back exactly as it was; after, the update is finished on
    the new version. It says which, and what it did. Exit codes as for `update`; while the
    interrupted run's updater still runs, 6 (`--wait S` waits for it too).

    \b
    Example:
      patchkeeper recover --install ~/.hermes/hermes-agent
    """
    workspace = open_workspace(install_path, patches_dir)
    refuse_overlapping_variants(workspace.patch_set)  # as update does
    options = UpdateOptions(timeout=timeout, as_json=as_json)
    with install_lock(workspace.install.state_dir, "recover", wait) as lock:
        report = recover(workspace, lock, options, wait)
    if lock.taken_over:
        report.actions.insert(0, f"took over the lock of dead {lock.taken_over.describe()}")
    code = report.exit_code()
    extra: dict = {}
    if report.update is not None:
        extra = update_json(report.update)
    elif report.tree is not None:
        extra = tree_json(report.tree)
    extra.setdefault("patches", [])
    if metrics_path is not None:
        write_metrics(metrics_path, "recover", code, extra, workspace.install.state_dir)
    if as_json:
        emit_json(
            "recover",
            code,
            direction=report.direction,
            meaning=meaning(report, code),
            actions=report.actions,
            **extra,
        )
        return code
    for action in report.actions:
        click.echo(f"recover: {action}")
    if report.update is not None:
        render_update(report.update)
    elif report.tree is not None:
        render_tree(report.tree, "status after recover")
    click.echo(f"result: {meaning(report, code)}")
    return code
