"""`patchkeeper smoke`: run the patch set's smoke checks against the install."""

from __future__ import annotations

from pathlib import Path

import click

from patchkeeper.commands.common import (
    install_option,
    json_option,
    metrics_option,
    open_workspace,
    patches_option,
    write_metrics,
)
from patchkeeper.proof.smoke.catalog import select_checks
from patchkeeper.proof.smoke.suite import run_checks
from patchkeeper.report.render import emit_json
from patchkeeper.report.smoke import echo_progress, proven_patches_json, render_smoke, smoke_json


@click.command("smoke")
@install_option
@patches_option
@click.option("--check", "check_name", default=None, help="Run only this check (smoke/NAME.py).")
@json_option
@metrics_option
def command(
    install_path: Path | None,
    patches_dir: Path | None,
    check_name: str | None,
    as_json: bool,
    metrics_path: Path | None,
) -> int:
    """Run behavioural smoke checks against the install with its own interpreter.

    Each check runs upstream code with a fresh HERMES_HOME and HOME, never the operator's,
    in a scratch folder under the install's .git/patchkeeper/smoke/ (removed when the check
    ends). Exit 4 when a check fails or could not check (crash, timeout, bad output, missing
    upstream function).

    \b
    Example:
      patchkeeper smoke --check ledger_adoption
    """
    workspace = open_workspace(install_path, patches_dir)
    names = select_checks(workspace.patch_set, check_name)
    progress = None if as_json else echo_progress
    report = run_checks(
        workspace.install, workspace.settings, workspace.patch_set, names, progress
    )
    if metrics_path is not None:
        document = {"install": str(workspace.install.path), **smoke_json(report)}
        write_metrics(metrics_path, "smoke", report.exit_code, document)
    if as_json:  # with how each patch stands in the work tree (as `status` says it)
        from patchkeeper.engine.patching import worktree_status

        tree = worktree_status(workspace.install, workspace.settings, workspace.patch_set)
        emit_json(
            "smoke",
            report.exit_code,
            install=str(workspace.install.path),
            patch_set=workspace.patch_set_label,
            **smoke_json(report),
            patches=proven_patches_json(tree, workspace.patch_set),
        )
    else:
        render_smoke(report)
    return report.exit_code
