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
from patchkeeper.report.recover import after_json, recovered_json, render_recovered
from patchkeeper.report.render import emit_json
from patchkeeper.update.context import UpdateOptions
from patchkeeper.update.recovery import recover


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
    after = after_json(report)
    if metrics_path is not None:
        write_metrics(metrics_path, "recover", code, after, workspace.install.state_dir)
    if as_json:
        emit_json("recover", code, **recovered_json(report, code, after))
    else:
        render_recovered(report, code)
    return code
