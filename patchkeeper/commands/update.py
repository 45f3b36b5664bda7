"""`patchkeeper update`: run the upstream updater and carry the patch set across it."""

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
    wait_option,
    write_metrics,
)
from patchkeeper.install.workspace import locked_for_writing
from patchkeeper.patchset.load import refuse_overlapping_variants
from patchkeeper.report.render import emit_json
from patchkeeper.report.update import render_update, update_json
from patchkeeper.update.context import UpdateOptions
from patchkeeper.update.run import lists_unmerged_paths, run_update


@click.command("update")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@click.option(
    "--timeout",
    type=Seconds(zero_ok=False),
    default=None,
    help="Seconds the upstream command may run (default: [update] timeout, else 3600).",
)
@click.option(
    "--preview",
    "preview_ref",
    metavar="REF",
    default=None,
    help="Classify the patch set against REF first; stop (exit 3) if one would not apply.",
)
@click.option("--force", is_flag=True, help="Go on after a --preview that found a conflict.")
@install_option
@patches_option
@wait_option
@json_option
@metrics_option
def command(
    args: tuple[str, ...],
    timeout: float | None,
    preview_ref: str | None,
    force: bool,
    install_path: Path | None,
    patches_dir: Path | None,
    wait: float,
    as_json: bool,
    metrics_path: Path | None,
) -> int:
    """Run the upstream update ([update] command, plus ARGS after `--`) keeping the patches.

    Takes patchkeeper's patches out and sets your own edits aside in a ref under
    refs/patchkeeper/, runs the updater, heals what it left behind (parked stashes), applies
    the patch set to the new version, merges your edits back file by file, runs the smoke
    checks and the post-apply commands. Exit 0 only when all of that is in place; 3 a patch
    did not apply, 4 a smoke check failed, 5 something needs you (each item is listed with
    the command that resolves it), 6 another patchkeeper holds the install. Besides the
    updater, it runs [install] version_command (or a
    `command` version source, when set), the smoke checks and [update]
    post_apply.

    \b
    Example:
      patchkeeper update --preview origin/main --timeout 900 -- --branch main
    """
    workspace = open_workspace(install_path, patches_dir)
    refuse_overlapping_variants(workspace.patch_set)  # the new version is not known yet
    options = UpdateOptions(args, timeout, preview_ref, force, as_json)
    unmerged_later = lists_unmerged_paths(options)
    with locked_for_writing(workspace, "update", wait, unmerged_later=unmerged_later) as lock:
        report = run_update(workspace, lock, options)
    if lock.taken_over:
        report.notes.append(f"took over a stale lock from dead {lock.taken_over.describe()}")
    if lock.settled:
        report.notes.append(lock.settled.describe())
    code = report.exit_code()
    if metrics_path is not None:
        document = update_json(report)
        write_metrics(metrics_path, "update", code, document, workspace.install.state_dir)
    if as_json:
        emit_json("update", code, **update_json(report))
    else:
        render_update(report)
    return code
