"""`patchkeeper unapply`: remove exactly what patchkeeper wrote, keeping the user's own edits."""

from __future__ import annotations

from pathlib import Path

import click

from patchkeeper.commands.common import (
    install_option,
    json_option,
    open_workspace,
    patches_option,
    wait_option,
)
from patchkeeper.engine.patching import unapply_patches
from patchkeeper.install.workspace import locked_for_writing
from patchkeeper.model import exitcodes
from patchkeeper.model import outcomes as oc
from patchkeeper.report.render import emit_json
from patchkeeper.report.tree import render_tree, tree_json


@click.command("unapply")
@click.argument("names", nargs=-1)
@install_option
@patches_option
@wait_option
@json_option
def command(
    names: tuple[str, ...],
    install_path: Path | None,
    patches_dir: Path | None,
    wait: float,
    as_json: bool,
) -> int:
    """Remove what patchkeeper wrote (all patches, or the NAMES given).

    The exact diff recorded at apply time is reversed; edits made by hand elsewhere, even in
    the same file, stay. A patch edited by hand since is left in place (`drifted`, exit 5).
    It runs [install] version_command (or a
    `command` version source, when set) to report the install's version.

    \b
    Example:
      patchkeeper unapply schema-once
    """
    workspace = open_workspace(install_path, patches_dir)
    with locked_for_writing(workspace, "unapply", wait) as lock:
        report = unapply_patches(workspace.install, workspace.settings, workspace.patch_set, names)
    report.patch_set = workspace.patch_set_label
    if lock.settled:
        report.notes.append(lock.settled.describe())
    drifted = any(r.outcome == oc.DRIFTED for r in report.results)
    kept = bool(lock.settled and lock.settled.kept)
    code = exitcodes.ATTENTION if drifted or kept else exitcodes.OK
    if as_json:
        emit_json("unapply", code, **tree_json(report))
    else:
        render_tree(report, "unapply")
    return code
