"""`patchkeeper refresh NAME`: rewrite a patch from the work tree after a manual conflict fix."""

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
from patchkeeper.commands.record import settled_notes
from patchkeeper.engine.patch_writer import refresh_patch
from patchkeeper.install.checkout.install import install_version
from patchkeeper.install.workspace import locked_for_writing, refuse_bundled_set
from patchkeeper.report.render import emit_json
from patchkeeper.report.tree import render_written, written_json


@click.command("refresh")
@click.argument("name")
@install_option
@patches_option
@wait_option
@click.option(
    "--whole-files",
    is_flag=True,
    help="Take every change in the patch's files, edits away from its hunks included.",
)
@json_option
def command(
    name: str,
    install_path: Path | None,
    patches_dir: Path | None,
    wait: float,
    whole_files: bool,
    as_json: bool,
) -> int:
    """Rewrite patch NAME (the variant for the current version) from the work tree.

    Typical use: `apply` reported a conflict; edit the files by hand until the fix is right
    on the new upstream, then refresh. The header is kept; Base and Last-Update are renewed.
    Of a patch that is not in place, the files your fix leaves as upstream has them (a module
    the patch creates) are kept as the patch has them, and written to the work tree. An edit
    of yours elsewhere in the patch's files (one that changes none of the patch's lines, away
    from its hunks) is left out of the patch and named; it stays in the work tree as yours.
    --whole-files takes it too (a fix rewritten away from where the patch had it).
    It runs [install] version_command (or a
    `command` version source, when set) to pick the variant.

    \b
    Example:
      patchkeeper refresh schema-once
    """
    workspace = open_workspace(install_path, patches_dir)
    refuse_bundled_set(workspace, "refresh")
    with locked_for_writing(workspace, "refresh", wait) as lock:
        version = install_version(workspace.install, workspace.settings)
        refreshed = refresh_patch(
            workspace.install, workspace.patch_set, version, name, whole_files=whole_files
        )
    notes, code = settled_notes(lock)
    notes += [
        f"kept {path} as the patch has it (your fix does not touch it), and wrote "
        "it to the work tree"
        for path in refreshed.kept
    ]
    notes += [
        f"left out {where}: an edit there is not part of {name} (it changes none of the "
        "patch's lines, away from its hunks); it stays in the work tree as yours (if it is "
        "part of the fix: refresh --whole-files)"
        for where in refreshed.left_out
    ]
    if as_json:
        document = written_json(workspace, version, name, refreshed.path, "refreshed", notes)
        emit_json("refresh", code, **document)
    else:
        render_written(f"refreshed {refreshed.path}", notes)
    return code
